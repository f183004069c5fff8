#include "models/fused_matmul.h"

#include <atomic>

namespace citeforge::models {
namespace {
std::atomic<bool> fused_decoding{true};
}  // namespace

bool fused_decoding_enabled() {
  return fused_decoding.load();
}
void set_fused_decoding(bool enabled) {
  fused_decoding.store(enabled);
}

int64_t fused_max_rows(torch::Dtype dtype) {
  if (dtype == torch::kFloat32) return 32;
  if (dtype == torch::kBFloat16) return 8;
  return 0;
}

bool fused_kernel_applies(int64_t rows, torch::Dtype dtype, torch::Device device) {
  return fused_decoding_enabled() && device.is_cpu() && rows <= fused_max_rows(dtype);
}

bool use_fused_kernel(const torch::Tensor& x) {
  if (x.requires_grad() || x.dim() == 0 || x.size(-1) == 0) return false;
  return fused_kernel_applies(x.numel() / x.size(-1), x.scalar_type(), x.device());
}

std::optional<torch::Tensor> fused_nf4_linear(const torch::Tensor& x, const Nf4Weight& weight) {
  if (!use_fused_kernel(x) || !cpu_matvec_supports(weight)) return std::nullopt;
  return nf4_matvec_cpu(x, weight);
}

std::optional<std::vector<torch::Tensor>> fused_nf4_linears(
    const torch::Tensor& x, const std::vector<const Nf4Weight*>& weights) {
  if (!use_fused_kernel(x)) return std::nullopt;
  for (const Nf4Weight* weight : weights)
    if (!cpu_matvec_supports(*weight) || weight->shape[1] != x.size(-1)) return std::nullopt;
  return nf4_matvec_cpu(x, weights);
}

std::optional<torch::Tensor> fused_output_layer(const torch::Tensor& x, const torch::Tensor& weight,
                                                DecodingHead& head) {
  if (!use_fused_kernel(x) || !cpu_matvec_supports(weight)) return std::nullopt;
  // A weight trained in this pass needs its gradient through the matmul.
  if (weight.requires_grad() && torch::GradMode::is_enabled()) return std::nullopt;
  if (!head.stamp.matches(weight)) {
    c10::InferenceMode kept_beyond_generation(false);  // a normal tensor, whoever asks next
    head.q8 = q8_exact_quantize(weight);
    head.q16 = head.q8 ? Q16Weight{} : q16_quantize(weight);
    head.stamp.take(weight);
  }
  return head.q8 ? q8_matvec_cpu(x, *head.q8) : q16_matvec_cpu(x, head.q16);
}

}  // namespace citeforge::models
