// RMSNorm of a decoding step's few rows on a CPU as one loop instead of ATen's eight operators
// (a cast, pow, sum, divide, add, rsqrt and two multiplies). Each of them costs a dispatch that
// outweighs its 576 values: on a 2-core EPYC the operators took 21 us a call in fp32 and 35 in
// bf16, and a SmolLM2 step calls RMSNorm 61 times (experiments/bench/results/decode_cpu_avx2.md).
#pragma once

#include <torch/torch.h>

#include <optional>

namespace citeforge::models {

// weight * (x / sqrt(mean(x^2) + eps)) as RMSNormImpl computes it (statistics in fp32, the
// normalised row cast to x's dtype, then scaled by the weight in that dtype), or nullopt where
// the loop does not apply: under grad mode (whether or not anything in the call needs a
// gradient, so that a forward pass's bits never depend on which weights are trainable), off the
// CPU, larger than a decoding step (those go to ATen's operators, which thread), or other than a
// contiguous fp32 or bf16 row with a weight of the same dtype. Every rounding is the operators'
// but one: the sum of squares is added in double and rounded once, where ATen adds fp32 partial
// sums in the order its vector width gives, so the mean of squares may differ in its last bit.
std::optional<torch::Tensor> rms_norm_loop(const torch::Tensor& x, const torch::Tensor& weight,
                                           double eps);

}  // namespace citeforge::models
