#include "models/rope.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace citeforge::models {
namespace {

// theta^(2i/d) for i < d/2, in fp32 as transformers computes it; the frequencies are 1 / this.
torch::Tensor theta_powers(double theta, int64_t dim, const torch::Device& device) {
  auto exponents = torch::arange(0, dim, 2, torch::TensorOptions().dtype(torch::kInt64))
                       .to(device, torch::kFloat32) /
                   double(dim);
  return torch::pow(theta, exponents);
}

// Llama 3.1's rule: wavelengths longer than the original context / low_freq_factor are slowed
// down by `factor`, shorter than context / high_freq_factor kept, and the band between blended.
torch::Tensor llama3_frequencies(const ModelConfig& c, const torch::Tensor& inv_freq) {
  const RopeScaling& s = c.rope_scaling;
  const double context = double(s.original_max_positions);
  const double low_wavelen = context / s.low_freq_factor,
               high_wavelen = context / s.high_freq_factor;
  auto wavelen = 2.0 * M_PI / inv_freq;
  auto slowed = torch::where(wavelen > low_wavelen, inv_freq / s.factor, inv_freq);
  auto smooth = (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  auto blended = (1 - smooth) * slowed / s.factor + smooth * slowed;
  auto medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
  return torch::where(medium, blended, slowed);
}

// YaRN's cos/sin factor: 0.1 ln(scale) mscale + 1, or the ratio of two of those.
double yarn_mscale(double scale, double mscale = 1.0) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// YaRN: per frequency a blend of interpolation (divided by factor) and extrapolation (kept),
// by a linear ramp between the dimensions that turn beta_fast and beta_slow times over the
// original context.
std::pair<torch::Tensor, double> yarn_frequencies(const ModelConfig& c,
                                                  const torch::Device& device) {
  const RopeScaling& s = c.rope_scaling;
  const int64_t dim = c.head_dim;
  // The pre-training context (hf_config fills it in from max_position_embeddings when absent).
  const double base = c.rope_theta,
               context = double(s.original_max_positions > 0 ? s.original_max_positions
                                                             : c.max_positions);
  const double factor = s.factor;
  double attention =
      s.attention_factor
          ? *s.attention_factor
          : (s.mscale && s.mscale_all_dim
                 ? yarn_mscale(factor, *s.mscale) / yarn_mscale(factor, *s.mscale_all_dim)
                 : yarn_mscale(factor));
  auto correction_dim = [&](double rotations) {
    return double(dim) * std::log(context / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(dim - 1));
  if (low == high) high += 0.001;  // no division by zero in the ramp
  auto pos_freqs = theta_powers(base, dim, device);
  auto extrapolation = 1.0 / pos_freqs;
  auto interpolation = 1.0 / (factor * pos_freqs);
  auto ramp =
      ((torch::arange(dim / 2, torch::TensorOptions().dtype(torch::kFloat32)) - low) / (high - low))
          .clamp(0, 1)
          .to(device);
  auto keep = 1 - ramp;  // 1: extrapolate (high frequencies), 0: interpolate
  return {interpolation * (1 - keep) + extrapolation * keep, attention};
}

}  // namespace

std::pair<torch::Tensor, double> rope_frequencies(const ModelConfig& c, int64_t max_position,
                                                  const torch::Device& device) {
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "yarn") return yarn_frequencies(c, device);
  double theta = c.rope_theta;
  if (s.type == "dynamic") {
    // NTK: past max_position_embeddings (the original context here, whatever
    // original_max_position_embeddings says: transformers reads only the former), theta grows
    // with the sequence length.
    const double context = double(c.max_positions);
    const double length = std::max(double(max_position + 1), context);
    const double d = double(c.head_dim);
    theta *= std::pow(s.factor * length / context - (s.factor - 1.0), d / (d - 2.0));
  }
  auto inv_freq = 1.0 / theta_powers(theta, c.head_dim, device);
  if (s.type == "linear") inv_freq = inv_freq / s.factor;
  if (s.type == "llama3") inv_freq = llama3_frequencies(c, inv_freq);
  return {inv_freq, 1.0};
}

RopeScaling llama3_scaling_from_factors(const ModelConfig& config, const torch::Tensor& factors,
                                        const std::string& where) {
  const int64_t half = config.head_dim / 2;
  if (factors.dim() != 1 || factors.size(0) != half)
    fail_at(where, "", "expected " + std::to_string(half) + " frequency factors (head_dim / 2)");
  const auto r = factors.to(torch::kFloat64).contiguous();
  if (!torch::isfinite(r).all().item<bool>() || (r <= 0).any().item<bool>())
    fail_at(where, "", "frequency factors must be finite and positive");
  const double top = r.max().item<double>();
  RopeScaling s;
  if ((r - 1).abs().max().item<double>() < 1e-6) return s;  // no scaling
  s.type = "llama3";
  s.factor = top;
  s.low_freq_factor = 1.0;
  // In the blended band a factor r_i = 1 / ((1 - t_i) / F + t_i) with t_i = C / (w_i (h - l)) -
  // l / (h - l), a line in 1 / w_i (w_i the wavelength): its slope and intercept give C and h.
  const auto inv_freq =
      1.0 / torch::pow(config.rope_theta,
                       torch::arange(0, config.head_dim, 2, torch::kFloat64) / config.head_dim);
  const auto per_wavelen = inv_freq / (2.0 * M_PI);
  const auto band = (r > 1 + 1e-6).logical_and(r < top * (1 - 1e-6));
  const auto refuse = [&](const std::string& detail) {
    fail_at(where, "",
            "frequency factors that Llama 3's RoPE scaling does not give (" + detail +
                "): not supported");
  };
  const auto t = ((1.0 / r - 1.0 / top) / (1.0 - 1.0 / top)).index({band});
  const auto x = per_wavelen.index({band});
  if (t.size(0) >= 2) {
    const double x0 = x[0].item<double>(), x1 = x[-1].item<double>();
    const double slope = (t[-1].item<double>() - t[0].item<double>()) / (x1 - x0);
    const double intercept = slope * x0 - t[0].item<double>();  // l / (h - l), with l = 1
    if (!(intercept > 0) || !(slope > 0))
      refuse("the blended band is not a line in 1 / wavelength");
    s.high_freq_factor = 1.0 + 1.0 / intercept;
    s.original_max_positions = std::llround(slope / intercept);
  } else {
    // Too few blended frequencies to tell h from C: the converter's h = 4, and C from the one
    // blended frequency (t = C / (3 w) - 1 / 3), else any C between the unscaled and the scaled
    // wavelengths (all give these factors): 8192 when it is one of them, else the largest.
    s.high_freq_factor = 4.0;
    if (t.size(0) == 1) {
      s.original_max_positions =
          std::llround((3.0 * t[0].item<double>() + 1.0) / x[0].item<double>());
    } else {
      const auto scaled = r >= top * (1 - 1e-6);
      const double shortest_scaled = (1.0 / per_wavelen.index({scaled})).min().item<double>();
      s.original_max_positions = shortest_scaled > 8192 ? 8192 : int64_t(shortest_scaled);
    }
  }
  // The same factors, recomputed through llama3_frequencies.
  ModelConfig scaled = config;
  scaled.rope_scaling = s;
  const auto defaults = inv_freq.to(torch::kFloat32);
  const auto got = (defaults / llama3_frequencies(scaled, defaults)).to(torch::kFloat64);
  const double worst = ((got - r).abs() / r).max().item<double>();
  if (worst > 1e-4)
    refuse("read as factor " + std::to_string(top) + ", original context " +
           std::to_string(s.original_max_positions) + ", they are off by " + std::to_string(worst));
  return s;
}

namespace {

torch::Tensor rotate_half(const torch::Tensor& x) {
  auto halves = x.chunk(2, -1);
  return torch::cat({-halves[1], halves[0]}, -1);
}

// Up to this many values a call runs as the one loop below (on one thread); larger ones (a
// prompt's pass) go to ATen's operators, which thread.
constexpr int64_t kLoopMaxValues = 1 << 16;

template <class Scalar>
void rotate_rows(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                 torch::Tensor& out) {
  const int64_t B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3), half = D / 2;
  const Scalar* xs = x.data_ptr<Scalar>();
  const float* cs = cos.data_ptr<float>();
  const float* ss = sin.data_ptr<float>();
  Scalar* ys = out.data_ptr<Scalar>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        const Scalar* row = xs + b * x.stride(0) + h * x.stride(1) + t * x.stride(2);
        const float* c = cs + b * cos.stride(0) + h * cos.stride(1) + t * cos.stride(2);
        const float* s = ss + b * sin.stride(0) + h * sin.stride(1) + t * sin.stride(2);
        Scalar* y = ys + b * out.stride(0) + h * out.stride(1) + t * out.stride(2);
        // ATen's order: x cos and rotate_half(x) sin each rounded to fp32, then their sum (the
        // file is compiled with -ffp-contract=off: no fused multiply-add).
        for (int64_t i = 0; i < half; ++i) {
          const float a = static_cast<float>(row[i]) * c[i];
          const float r = -static_cast<float>(row[i + half]) * s[i];
          y[i] = Scalar(a + r);
        }
        for (int64_t i = half; i < D; ++i) {
          const float a = static_cast<float>(row[i]) * c[i];
          const float r = static_cast<float>(row[i - half]) * s[i];
          y[i] = Scalar(a + r);
        }
      }
}

// Whether the rotation of x by the tables runs as the loop (see apply_rope).
bool rope_loop_applies(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const auto dtype = x.scalar_type();
  return x.device().is_cpu() && x.dim() == 4 && x.size(3) % 2 == 0 && x.numel() <= kLoopMaxValues &&
         x.stride(3) == 1 && (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
         cos.scalar_type() == torch::kFloat32 && sin.scalar_type() == torch::kFloat32 &&
         cos.dim() == 4 && cos.sizes() == sin.sizes() && cos.size(3) == x.size(3) &&
         cos.stride(3) == 1 && sin.stride(3) == 1 &&
         !(torch::GradMode::is_enabled() && x.requires_grad());
}

void rotate_into(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                 torch::Tensor& out) {
  const auto sizes = x.sizes();
  const auto c = cos.expand(sizes), s = sin.expand(sizes);
  if (x.scalar_type() == torch::kFloat32)
    rotate_rows<float>(x, c, s, out);
  else
    rotate_rows<c10::BFloat16>(x, c, s, out);
}

}  // namespace

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos,
                         const torch::Tensor& sin) {
  if (!rope_loop_applies(x, cos, sin)) {
    auto xf = x.to(torch::kFloat32);
    return (xf * cos + rotate_half(xf) * sin).to(x.scalar_type());
  }
  auto out = torch::empty(x.sizes(), x.options().memory_format(c10::MemoryFormat::Contiguous));
  rotate_into(x, cos, sin, out);
  return out;
}

void apply_rope_into(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                     torch::Tensor out) {
  if (rope_loop_applies(x, cos, sin) && out.device().is_cpu() &&
      out.scalar_type() == x.scalar_type() && out.sizes() == x.sizes() && out.stride(3) == 1) {
    rotate_into(x, cos, sin, out);
    return;
  }
  out.copy_(apply_rope(x, cos, sin));
}

std::pair<torch::Tensor, torch::Tensor> rope_tables(const torch::Tensor& positions,
                                                    const ModelConfig& config) {
  const int64_t max_position = config.rope_scaling.type == "dynamic" && positions.numel() > 0
                                   ? positions.max().item<int64_t>()
                                   : 0;
  auto [inv_freq, scale] = rope_frequencies(config, max_position, positions.device());
  auto freqs = positions.to(torch::kFloat32).unsqueeze(-1) * inv_freq;  // [B, T, D/2]
  auto emb = torch::cat({freqs, freqs}, -1).unsqueeze(1);               // [B, 1, T, D]
  if (scale == 1.0) return {emb.cos(), emb.sin()};
  return {emb.cos() * scale, emb.sin() * scale};
}

namespace {

constexpr int64_t kCachedCallMaxPositions = 4096;
constexpr int64_t kCachedPositionLimit = int64_t(1) << 16;
constexpr int64_t kCacheMinRows = 256;

// The largest of `positions` if the cache may serve them (see rope_tables with a cache), else -1.
int64_t cacheable_max_position(const torch::Tensor& positions, const ModelConfig& config) {
  if (config.rope_scaling.type == "dynamic" || !positions.device().is_cpu() ||
      positions.scalar_type() != torch::kInt64 || !positions.is_contiguous() ||
      positions.dim() != 2 || positions.numel() == 0 || positions.numel() > kCachedCallMaxPositions)
    return -1;
  const int64_t* p = positions.data_ptr<int64_t>();
  int64_t top = 0;
  for (int64_t i = 0; i < positions.numel(); ++i) {
    if (p[i] < 0 || p[i] >= kCachedPositionLimit) return -1;
    top = std::max(top, p[i]);
  }
  return top;
}

void grow(RopeTableCache& cache, int64_t max_position, const ModelConfig& config) {
  int64_t rows = std::max(kCacheMinRows, cache.rows);
  while (rows <= max_position) rows *= 2;
  // Kept beyond the call that builds it: a normal tensor even under inference mode, with no
  // gradient, so that training may read it too.
  c10::InferenceMode kept_beyond_the_call(false);
  torch::NoGradGuard no_grad;
  auto [cos, sin] = rope_tables(torch::arange(rows, torch::kInt64).unsqueeze(0), config);
  cache.cos = cos.reshape({rows, config.head_dim}).contiguous();
  cache.sin = sin.reshape({rows, config.head_dim}).contiguous();
  cache.rows = rows;
}

// table[positions] as [B, 1, T, D].
torch::Tensor rows_of(const torch::Tensor& table, const torch::Tensor& positions) {
  const int64_t B = positions.size(0), T = positions.size(1), D = table.size(1);
  auto out = torch::empty({B, 1, T, D}, table.options());
  const int64_t* p = positions.data_ptr<int64_t>();
  const float* from = table.data_ptr<float>();
  float* to = out.data_ptr<float>();
  for (int64_t i = 0; i < B * T; ++i) std::copy(from + p[i] * D, from + (p[i] + 1) * D, to + i * D);
  return out;
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> rope_tables(const torch::Tensor& positions,
                                                    const ModelConfig& config,
                                                    RopeTableCache& cache) {
  const int64_t top = cacheable_max_position(positions, config);
  if (top < 0) return rope_tables(positions, config);
  if (top >= cache.rows) grow(cache, top, config);
  return {rows_of(cache.cos, positions), rows_of(cache.sin, positions)};
}

}  // namespace citeforge::models
