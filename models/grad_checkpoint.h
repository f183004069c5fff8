// Activation (gradient) checkpointing: run a block without keeping its activations and run it
// again during the backward pass, trading one extra forward per block for memory, as
// torch.utils.checkpoint does. The recomputation replays the forward pass's random state, so
// dropout masks match and the gradients equal those of the plain forward (on a CPU or a GPU).
#pragma once

#include <torch/torch.h>

#include <functional>

namespace citeforge::models {

using BlockFunction = std::function<torch::Tensor(const torch::Tensor&)>;

// `block(x)`, with gradients to `x` and to every parameter `block` uses, but without saving the
// block's intermediate activations. Without grad mode it is just `block(x)`.
torch::Tensor checkpointed(const BlockFunction& block, const torch::Tensor& x);

}  // namespace citeforge::models
