// x W^T for an NF4 base weight when a gradient must flow back to x, without autograd keeping
// the dense weight for the backward pass. torch::linear on a dequantised weight saves that
// weight (the input's gradient needs it), so a training step on a GPU held the whole base in
// bf16 beside its codes (experiments/gpu.md); here the backward pass dequantises again from the
// codes, as bitsandbytes' 4-bit matmul does, and only the codes are kept.
#pragma once

#include <torch/torch.h>

#include "models/nf4.h"

namespace citeforge::models {

// x [..., in] times the dequantised `weight` [out, in] transposed, in x's dtype. The gradient
// reaches x only (the base is frozen); equal to torch::linear(x, nf4_dequantize(weight, dtype)).
torch::Tensor nf4_linear(const torch::Tensor& x, const Nf4Weight& weight);

}  // namespace citeforge::models
