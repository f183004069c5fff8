#include "models/sampling.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <mutex>
#include <string>

#include "common/error.h"

namespace citeforge::models {

torch::Tensor sampling_probs(const torch::Tensor& logits, double temperature, double top_p) {
  auto probs = torch::softmax(logits.to(torch::kFloat32) / temperature, -1);
  if (top_p < 1.0) {
    auto [sorted, order] = probs.sort(-1, /*descending=*/true);
    // Keep a token while the mass before it is below top_p; the most likely token always stays.
    auto before = sorted.cumsum(-1) - sorted;
    sorted = sorted.masked_fill(before >= top_p, 0.0);
    probs = torch::zeros_like(probs).scatter(-1, order, sorted);
    probs = probs / probs.sum(-1, true);
  }
  return probs;
}

double next_uniform(at::Generator& cpu_generator) {
  std::lock_guard<std::mutex> lock(cpu_generator.mutex());
  const uint64_t bits = cpu_generator.get<at::CPUGeneratorImpl>()->random64();
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

torch::Tensor draw_by_inverse_cdf(const torch::Tensor& probs, const std::vector<double>& uniforms) {
  if (probs.dim() != 2 || probs.size(0) != static_cast<int64_t>(uniforms.size()) ||
      probs.size(1) == 0)
    throw Error("draw_by_inverse_cdf: expected [rows, vocab] probabilities and one uniform a row");
  const auto cdf = probs.to(torch::kFloat64).cumsum(-1);
  const auto total = cdf.select(-1, cdf.size(-1) - 1);
  const auto totals = total.cpu().contiguous();
  const auto* t = totals.data_ptr<double>();
  for (int64_t row = 0; row < totals.numel(); ++row)
    if (!std::isfinite(t[row]) || t[row] <= 0)
      throw Error("sampling: the next-token probabilities of row " + std::to_string(row) +
                  " are not finite or sum to 0 (non-finite logits)");
  const auto u = torch::tensor(uniforms, torch::kFloat64).to(probs.device());
  // u < 1, but u x total can round up to total; just below it the search still ends on a token
  // of positive probability (the cumulative sum is non-decreasing).
  const auto target = torch::minimum(u * total, total * (1.0 - 0x1.0p-50)).unsqueeze(-1);
  return torch::searchsorted(cdf, target, /*out_int32=*/false, /*right=*/true).squeeze(-1);
}

}  // namespace citeforge::models
