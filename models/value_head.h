// PPO's critic: a linear layer from the decoder's final hidden state (after the last RMSNorm)
// to one scalar value per token, trained alongside the LoRA adapters. Parameter names follow
// TRL's ValueHead ("summary.weight" [1, hidden], "summary.bias" [1]) so a saved head reads the
// same in both; the owning model prefixes them (TRL uses "v_head.").
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace citeforge::models {

struct ValueHeadOptions {
  int64_t hidden_size = 0;
  // Dropout on the hidden state before the projection (TRL's summary_dropout_prob); active in
  // train() mode only.
  double dropout = 0.0;
  // Weights start as N(0, init_std^2) and the bias at 0, so the first value estimates are small
  // and the first value losses do not swamp the policy loss. 0 gives an all-zero head.
  double init_std = 0.02;
};

// PPO's head for a decoder of `hidden_size`: init_std 1 / (hidden + 1), so the first values
// are of order 1/sqrt(hidden) whatever the width (OpenRLHF's choice). With a fixed std of 0.02
// a 4096-wide model would start at values of order 1 against rewards in [0, 1].
ValueHeadOptions width_scaled_value_head(int64_t hidden_size);

struct ValueHeadImpl : torch::nn::Module {
  // Parameters are fp32 whatever the decoder's dtype. Invalid options are an Error.
  explicit ValueHeadImpl(const ValueHeadOptions& options);

  // Values [B, T] in fp32 from hidden states [B, T, hidden] of any floating dtype.
  torch::Tensor forward(const torch::Tensor& hidden);

  ValueHeadOptions options;
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear summary{nullptr};
};
TORCH_MODULE(ValueHead);

}  // namespace citeforge::models
