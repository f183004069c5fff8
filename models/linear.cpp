#include "models/linear.h"

namespace citeforge::models {

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features) {
  weight = register_parameter("weight", torch::empty({out_features, in_features}));
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));  // torch.nn.Linear's default
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  return torch::linear(x, weight);
}

RMSNormImpl::RMSNormImpl(int64_t size, double eps_) : eps(eps_) {
  weight = register_parameter("weight", torch::ones({size}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  auto h = x.to(torch::kFloat32);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(x.scalar_type());
}

}  // namespace citeforge::models
