// The state of a device's default random generator, read and restored whole: dropout draws
// from the generator of the device it runs on (the CPU's, or a GPU's own), so replaying or
// resuming a random stream needs the state of that device's generator, not only the CPU's.
#pragma once

#include <torch/torch.h>

namespace citeforge::models {

// The default generator's state for `device` (a CUDA device without an index: the current one).
torch::Tensor generator_state(const torch::Device& device = torch::kCPU);
void set_generator_state(const torch::Tensor& state, const torch::Device& device = torch::kCPU);

}  // namespace citeforge::models
