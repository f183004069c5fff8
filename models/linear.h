// A bias-free linear layer with the parameter name HF uses ("weight", [out, in]).
// Every projection of the decoder is one of these, so later layers (NF4 base, LoRA adapters)
// replace one type rather than many call sites.
#pragma once

#include <torch/torch.h>

namespace citeforge::models {

struct LinearImpl : torch::nn::Module {
  LinearImpl(int64_t in_features, int64_t out_features);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;
};
TORCH_MODULE(Linear);

// Root-mean-square layer norm as HF computes it: statistics in fp32, scale in the input dtype.
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t size, double eps);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;
  double eps;
};
TORCH_MODULE(RMSNorm);

}  // namespace citeforge::models
