#include "trainer/distributed/gradient_sum.h"

namespace citeforge::trainer {

void all_reduce_gradients(const std::vector<torch::Tensor>& params, std::vector<double>& totals,
                          const ReduceSum& reduce, const std::string& phase) {
  const torch::Device device = params.front().device();
  std::vector<torch::Tensor> parts;
  for (const auto& p : params)
    parts.push_back(p.grad().defined() ? p.grad().to(torch::kFloat32).reshape(-1)
                                       : torch::zeros({p.numel()}, torch::kFloat32).to(device));
  parts.push_back(torch::tensor(totals, torch::kFloat64).to(torch::kFloat32).to(device));
  auto flat = torch::cat(parts);
  reduce(flat, phase);
  flat = flat.cpu();
  torch::NoGradGuard no_grad;
  int64_t at = 0;
  for (const auto& p : params) {
    auto summed = flat.narrow(0, at, p.numel()).view(p.sizes()).to(p.device(), p.scalar_type());
    if (p.grad().defined())
      p.mutable_grad().copy_(summed);
    else
      p.mutable_grad() = summed.clone();  // not a view of `flat`
    at += p.numel();
  }
  for (auto& t : totals) t = flat[at++].item<double>();
}

}  // namespace citeforge::trainer
