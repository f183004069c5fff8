#include "models/rms_norm_loop.h"

#include <cmath>

namespace citeforge::models {
namespace {

// Up to this many values a call runs as the loop (on one thread), as RoPE's loop does.
constexpr int64_t kLoopMaxValues = 1 << 16;

template <class Scalar>
void normalise_rows(const Scalar* x, const Scalar* weight, int64_t rows, int64_t width, float eps,
                    Scalar* y) {
  for (int64_t r = 0; r < rows; ++r, x += width, y += width) {
    double squares = 0;
    for (int64_t i = 0; i < width; ++i) {
      const float v = static_cast<float>(x[i]);
      squares += double(v * v);  // pow(2) rounds each square to fp32
    }
    const float mean = float(squares) / float(width);
    const float scale = 1.0f / std::sqrt(mean + eps);
    // The normalised value in x's dtype, then times the weight in that dtype (bf16 * bf16 is
    // computed in fp32 and rounded once, as ATen's does): no fused multiply-add (this file is
    // compiled with -ffp-contract=off).
    for (int64_t i = 0; i < width; ++i)
      y[i] = Scalar(static_cast<float>(weight[i]) *
                    static_cast<float>(Scalar(static_cast<float>(x[i]) * scale)));
  }
}

}  // namespace

std::optional<torch::Tensor> rms_norm_loop(const torch::Tensor& x, const torch::Tensor& weight,
                                           double eps) {
  const auto dtype = x.scalar_type();
  const bool applies = x.device().is_cpu() && weight.device().is_cpu() && x.dim() >= 1 &&
                       (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
                       weight.scalar_type() == dtype && weight.dim() == 1 &&
                       x.size(-1) == weight.size(0) && x.size(-1) > 0 &&
                       x.numel() <= kLoopMaxValues && x.is_contiguous() && weight.is_contiguous() &&
                       !torch::GradMode::is_enabled();
  if (!applies) return std::nullopt;
  auto y = torch::empty_like(x, torch::MemoryFormat::Contiguous);
  const int64_t width = x.size(-1), rows = x.numel() / width;
  if (dtype == torch::kFloat32)
    normalise_rows(x.data_ptr<float>(), weight.data_ptr<float>(), rows, width, float(eps),
                   y.data_ptr<float>());
  else
    normalise_rows(x.data_ptr<c10::BFloat16>(), weight.data_ptr<c10::BFloat16>(), rows, width,
                   float(eps), y.data_ptr<c10::BFloat16>());
  return y;
}

}  // namespace citeforge::models
