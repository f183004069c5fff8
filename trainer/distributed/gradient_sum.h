// The one collective of a data-parallel step, shared by SFT and PPO: every rank's gradients and
// a few totals (loss, tokens, ...) summed in one all-reduce of one fp32 buffer, on the device the
// gradients live on (NCCL reduces GPU memory; Gloo takes either).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace citeforge::trainer {

// Sums a tensor over the ranks in place; `phase` names the step in a timeout's message.
using ReduceSum = std::function<void(torch::Tensor& values, const std::string& phase)>;

// Replaces each parameter's gradient by the sum over the ranks (a rank that computed none adds
// zeros) and `totals` by their sums.
void all_reduce_gradients(const std::vector<torch::Tensor>& params, std::vector<double>& totals,
                          const ReduceSum& reduce, const std::string& phase);

}  // namespace citeforge::trainer
