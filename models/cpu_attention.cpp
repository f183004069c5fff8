#include "models/cpu_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "models/cpu_matvec.h"
#include "models/fused_matmul.h"
#include "models/model_tensors.h"

#if defined(__x86_64__) || defined(_M_X64)
#define CITEFORGE_X86 1
#include <immintrin.h>
#endif

namespace citeforge::models {
namespace {

#define CITEFORGE_INLINE __attribute__((always_inline)) inline

constexpr int kLanes = 16;  // the sums' fixed lanes: one AVX-512 register, two AVX2 ones

// One kv head of one row: its `groups` query heads against `slots` cached keys and values.
template <class T>
struct HeadJob {
  const T* q;  // groups rows of `dim`, q_stride apart
  int64_t q_stride;
  const T* k;  // slots rows of `dim`, k_stride apart
  int64_t k_stride;
  const T* v;
  int64_t v_stride;
  const float* bias;  // slots values, bias_stride apart; null for none
  int64_t bias_stride;
  T* out;  // groups rows of `dim`, out_stride apart
  int64_t out_stride;
  int64_t groups, slots, dim;
  float root_dim;  // sqrt(dim) in fp32, as the exact path divides by it
  float* scores;   // scratch: groups x slots
  float* sums;     // scratch: groups x dim
};

CITEFORGE_INLINE float load(float x) {
  return x;
}
CITEFORGE_INLINE float load(c10::BFloat16 x) {
  return static_cast<float>(x);
}

// An fp32 value as a tensor of T holds it (round to nearest even for bf16).
template <class T>
CITEFORGE_INLINE float rounded(float x) {
  return static_cast<float>(T(x));
}

// The lanes folded in halves by `combine` (a sum unless told otherwise): lane l + width onto
// lane l, width 8, 4, 2, 1.
template <class Combine = std::plus<float>>
CITEFORGE_INLINE float fold(float (&lanes)[kLanes], Combine combine = {}) {
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l) lanes[l] = combine(lanes[l], lanes[l + width]);
  return lanes[0];
}

// exp_of's constants, which its 8-wide form below shares.
constexpr float kExpLowest = -87.33654f, kExpHighest = 88.72283f;
constexpr float kExpShift = 12582912.0f;  // 1.5 * 2^23
constexpr float kLog2e = 1.44269504088896341f, kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
constexpr float kExpPolynomial[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                     4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

// e^x in plain arithmetic, so that a loop of it vectorises on every path and gives the same bits
// on each: Cephes' expf (x = n ln 2 + r with |r| <= ln 2 / 2, a degree-6 polynomial in r, times
// 2^n built in the exponent bits), within 2 ulp of the exact value. Below the smallest normal
// result it is 0, as libm's underflows (masked slots, at the dtype's lowest bias, must weigh 0).
CITEFORGE_INLINE float exp_of(float x) {
  // Comparisons that send NaN to `kExpLowest`, so the arithmetic below stays finite; NaN itself
  // is passed through at the end.
  const float clamped = x > kExpHighest ? kExpHighest : (x > kExpLowest ? x : kExpLowest);
  // Round to nearest by adding and removing 1.5 * 2^23 (no rounding call, so it vectorises).
  const float n = (clamped * kLog2e + kExpShift) - kExpShift;
  const float r = (clamped - n * kLn2High) - n * kLn2Low;
  float p = kExpPolynomial[0];
  for (int i = 1; i < 6; ++i) p = p * r + kExpPolynomial[i];
  const float y = p * (r * r) + r + 1.0f;
  const float two_to_n =
      std::bit_cast<float>((static_cast<uint32_t>(static_cast<int32_t>(n)) + 127u) << 23);
  return x < kExpLowest ? 0.0f : (x == x ? y * two_to_n : x);
}

// The largest of x[0..n), in the fixed lanes (slot s in lane s % 16).
CITEFORGE_INLINE float largest(const float* x, int64_t n) {
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -std::numeric_limits<float>::infinity());
  int64_t s = 0;
  for (; s + kLanes <= n; s += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] = std::max(lanes[l], x[s + l]);
  for (int l = 0; s + l < n; ++l) lanes[l] = std::max(lanes[l], x[s + l]);
  return fold(lanes, [](float a, float b) { return std::max(a, b); });
}

CITEFORGE_INLINE float sum_of(const float* x, int64_t n) {
  float lanes[kLanes] = {};
  int64_t s = 0;
  for (; s + kLanes <= n; s += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += x[s + l];
  for (int l = 0; s + l < n; ++l) lanes[l] += x[s + l];
  return fold(lanes);
}

template <class T>
CITEFORGE_INLINE float dot(const T* a, const T* b, int64_t n) {
  float lanes[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes)
    for (int l = 0; l < kLanes; ++l) lanes[l] += load(a[d + l]) * load(b[d + l]);
  for (int l = 0; d + l < n; ++l) lanes[l] += load(a[d + l]) * load(b[d + l]);
  return fold(lanes);
}

#if defined(CITEFORGE_X86)
// GCC 12's AVX-512 intrinsics start many results from `_mm512_undefined_*` (x = x), which
// -Wmaybe-uninitialized reports at every inlined use: a false positive of the headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define CITEFORGE_AVX2 __attribute__((target("avx2")))
#define CITEFORGE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

// The same dot product with the lanes in registers: lanes 0-15 as one AVX-512 register or two
// AVX2 ones (0-7, 8-15), folded in the same halves.
CITEFORGE_AVX2 CITEFORGE_INLINE __m256 load8(const float* x) {
  return _mm256_loadu_ps(x);
}
CITEFORGE_AVX2 CITEFORGE_INLINE __m256 load8(const c10::BFloat16* x) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}
CITEFORGE_AVX2 CITEFORGE_INLINE float fold8(__m256 x) {
  __m128 t = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));  // l += l + 4
  t = _mm_add_ps(t, _mm_movehl_ps(t, t));                                         // l += l + 2
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));                   // l += l + 1
}

template <class T>
CITEFORGE_AVX2 CITEFORGE_INLINE float dot_avx2(const T* a, const T* b, int64_t n) {
  if (n % kLanes != 0) return dot(a, b, n);
  __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
  for (int64_t d = 0; d < n; d += kLanes) {
    low = _mm256_add_ps(low, _mm256_mul_ps(load8(a + d), load8(b + d)));
    high = _mm256_add_ps(high, _mm256_mul_ps(load8(a + d + 8), load8(b + d + 8)));
  }
  return fold8(_mm256_add_ps(low, high));  // l += l + 8
}

CITEFORGE_AVX512 CITEFORGE_INLINE __m512 load16(const float* x) {
  return _mm512_loadu_ps(x);
}
CITEFORGE_AVX512 CITEFORGE_INLINE __m512 load16(const c10::BFloat16* x) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}

template <class T>
CITEFORGE_AVX512 CITEFORGE_INLINE float dot_avx512(const T* a, const T* b, int64_t n) {
  if (n % kLanes != 0) return dot(a, b, n);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t d = 0; d < n; d += kLanes)
    sum = _mm512_add_ps(sum, _mm512_mul_ps(load16(a + d), load16(b + d)));
  const __m256 halves = _mm256_add_ps(
      _mm512_castps512_ps256(sum),
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sum), 1)));  // l += l + 8
  return fold8(halves);
}
#endif

// The scaled scores plus the bias, slot by slot so that each key is read once for the whole
// group; `dot` is the path's dot product.
#define CITEFORGE_SCORES(dot)                                                                     \
  for (int64_t s = 0; s < job.slots; ++s) {                                                       \
    const T* key = job.k + s * job.k_stride;                                                      \
    const float bias = job.bias ? job.bias[s * job.bias_stride] : 0.0f;                           \
    for (int64_t g = 0; g < job.groups; ++g) {                                                    \
      const float score = rounded<T>(dot(job.q + g * job.q_stride, key, job.dim)) / job.root_dim; \
      job.scores[g * job.slots + s] = job.bias ? score + bias : score;                            \
    }                                                                                             \
  }

template <class T>
void scores_portable(const HeadJob<T>& job) {
  CITEFORGE_SCORES(dot)
}
#if defined(CITEFORGE_X86)
template <class T>
CITEFORGE_AVX2 void scores_avx2(const HeadJob<T>& job) {
  CITEFORGE_SCORES(dot_avx2)
}
template <class T>
CITEFORGE_AVX512 void scores_avx512(const HeadJob<T>& job) {
  CITEFORGE_SCORES(dot_avx512)
}
#endif

template <CpuIsa P, class T>
CITEFORGE_INLINE void score_on(const HeadJob<T>& job) {
#if defined(CITEFORGE_X86)
  if constexpr (P == CpuIsa::avx512) return scores_avx512(job);
  if constexpr (P == CpuIsa::avx2) return scores_avx2(job);
#endif
  scores_portable(job);
}

#if defined(CITEFORGE_X86)
// exp_of on 8 values: the same operations in the same order, so the same bits.
CITEFORGE_AVX2 CITEFORGE_INLINE __m256 exp_of8(__m256 x) {
  const __m256 lowest = _mm256_set1_ps(kExpLowest), highest = _mm256_set1_ps(kExpHighest);
  const __m256 above_lowest = _mm256_blendv_ps(lowest, x, _mm256_cmp_ps(x, lowest, _CMP_GT_OQ));
  const __m256 clamped =
      _mm256_blendv_ps(above_lowest, highest, _mm256_cmp_ps(x, highest, _CMP_GT_OQ));
  const __m256 shift = _mm256_set1_ps(kExpShift);
  const __m256 n =
      _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(clamped, _mm256_set1_ps(kLog2e)), shift), shift);
  const __m256 r = _mm256_sub_ps(_mm256_sub_ps(clamped, _mm256_mul_ps(n, _mm256_set1_ps(kLn2High))),
                                 _mm256_mul_ps(n, _mm256_set1_ps(kLn2Low)));
  __m256 p = _mm256_set1_ps(kExpPolynomial[0]);
  for (int i = 1; i < 6; ++i)
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kExpPolynomial[i]));
  const __m256 y =
      _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
  const __m256 two_to_n = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23));
  const __m256 e = _mm256_blendv_ps(x, _mm256_mul_ps(y, two_to_n), _mm256_cmp_ps(x, x, _CMP_EQ_OQ));
  return _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(x, lowest, _CMP_LT_OQ));
}
#endif

// p[s] = exp_of(p[s] - top): the softmax's costliest loop, which GCC leaves scalar.
CITEFORGE_INLINE void exp_minus_portable(float* p, int64_t from, int64_t n, float top) {
  for (int64_t s = from; s < n; ++s) p[s] = exp_of(p[s] - top);
}

#if defined(CITEFORGE_X86)
CITEFORGE_AVX2 void exp_minus_avx2(float* p, int64_t n, float top) {
  const __m256 t = _mm256_set1_ps(top);
  int64_t s = 0;
  for (; s + 8 <= n; s += 8)
    _mm256_storeu_ps(p + s, exp_of8(_mm256_sub_ps(_mm256_loadu_ps(p + s), t)));
  exp_minus_portable(p, s, n, top);
}
#endif

template <CpuIsa P>
CITEFORGE_INLINE void exp_minus(float* p, int64_t n, float top) {
#if defined(CITEFORGE_X86)
  if constexpr (P != CpuIsa::portable) return exp_minus_avx2(p, n, top);
#endif
  exp_minus_portable(p, 0, n, top);
}

// Each query head's sum of the values weighted by its probabilities, slot by slot (a slot of
// probability 0, masked, adds nothing and is skipped), then rounded to T.
template <class T>
CITEFORGE_INLINE void weighted_values_portable(const HeadJob<T>& job) {
  const int64_t G = job.groups, S = job.slots, D = job.dim;
  std::fill(job.sums, job.sums + G * D, 0.0f);
  for (int64_t s = 0; s < S; ++s) {
    const T* value = job.v + s * job.v_stride;
    for (int64_t g = 0; g < G; ++g) {
      const float p = job.scores[g * S + s];
      if (p == 0.0f) continue;
      float* sum = job.sums + g * D;
      for (int64_t d = 0; d < D; ++d) sum[d] += p * load(value[d]);
    }
  }
  for (int64_t g = 0; g < G; ++g)
    for (int64_t d = 0; d < D; ++d) job.out[g * job.out_stride + d] = T(job.sums[g * D + d]);
}

#if defined(CITEFORGE_X86)
// The same sums 64 values at a time in eight registers instead of memory: each value's adds in
// the same slot order, so the same bits.
template <class T>
CITEFORGE_AVX2 void weighted_values_avx2(const HeadJob<T>& job) {
  const int64_t S = job.slots, D = job.dim;
  if (D % 64 != 0) return weighted_values_portable(job);
  for (int64_t g = 0; g < job.groups; ++g) {
    const float* probs = job.scores + g * S;
    for (int64_t d0 = 0; d0 < D; d0 += 64) {
      __m256 acc[8];
      for (auto& a : acc) a = _mm256_setzero_ps();
      for (int64_t s = 0; s < S; ++s) {
        if (probs[s] == 0.0f) continue;
        const __m256 p = _mm256_set1_ps(probs[s]);
        const T* value = job.v + s * job.v_stride + d0;
        for (int i = 0; i < 8; ++i)
          acc[i] = _mm256_add_ps(acc[i], _mm256_mul_ps(p, load8(value + 8 * i)));
      }
      T* out = job.out + g * job.out_stride + d0;
      for (int i = 0; i < 8; ++i) {
        if constexpr (std::is_same_v<T, float>) {
          _mm256_storeu_ps(out + 8 * i, acc[i]);
        } else {
          alignas(32) float lanes[8];
          _mm256_store_ps(lanes, acc[i]);
          for (int l = 0; l < 8; ++l) out[8 * i + l] = T(lanes[l]);
        }
      }
    }
  }
}
#endif

template <CpuIsa P, class T>
CITEFORGE_INLINE void weighted_values(const HeadJob<T>& job) {
#if defined(CITEFORGE_X86)
  if constexpr (P != CpuIsa::portable) return weighted_values_avx2(job);
#endif
  weighted_values_portable(job);
}

template <CpuIsa P, class T>
CITEFORGE_INLINE void attend(const HeadJob<T>& job) {
  const int64_t G = job.groups, S = job.slots;
  score_on<P>(job);
  // The softmax as ATen's CPU kernel orders it: the maximum, exp(x - max) and their sum, then
  // each times the sum's reciprocal.
  for (int64_t g = 0; g < G; ++g) {
    float* p = job.scores + g * S;
    const float top = largest(p, S);
    exp_minus<P>(p, S, top);
    const float inverse = 1.0f / sum_of(p, S);
    for (int64_t s = 0; s < S; ++s) p[s] = rounded<T>(p[s] * inverse);
  }
  weighted_values<P>(job);
}

template <class T>
void attend_portable(const HeadJob<T>& job) {
  attend<CpuIsa::portable>(job);
}

#if defined(CITEFORGE_X86)
template <class T>
CITEFORGE_AVX2 void attend_avx2(const HeadJob<T>& job) {
  attend<CpuIsa::avx2>(job);
}
template <class T>
CITEFORGE_AVX512 void attend_avx512(const HeadJob<T>& job) {
  attend<CpuIsa::avx512>(job);
}
#endif

template <class T>
void (*pick_path(CpuIsa isa))(const HeadJob<T>&) {
#if defined(CITEFORGE_X86)
  if (isa == CpuIsa::avx512) return attend_avx512<T>;
  if (isa == CpuIsa::avx2) return attend_avx2<T>;
#endif
  (void)isa;
  return attend_portable<T>;
}

template <class T>
void run_heads(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
               const torch::Tensor& bias, int64_t groups, torch::Tensor& out) {
  const int64_t B = q.size(0), D = q.size(3), KV = k.size(1), S = k.size(2);
  const auto path = pick_path<T>(active_cpu_isa());
  const T* q_data = q.data_ptr<T>();
  const T* k_data = k.data_ptr<T>();
  const T* v_data = v.data_ptr<T>();
  const float* bias_data = bias.defined() ? bias.data_ptr<float>() : nullptr;
  T* out_data = out.data_ptr<T>();
  const float root_dim = static_cast<float>(std::sqrt(double(D)));
  // A job is a few µs at a decoding step's sizes: threads only where there is work for them.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, groups * S * D));
  at::parallel_for(0, B * KV, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(size_t(groups * S)), sums(size_t(groups * D));
    for (int64_t job_index = begin; job_index < end; ++job_index) {
      const int64_t b = job_index / KV, h = job_index % KV;
      HeadJob<T> job{q_data + b * q.stride(0) + h * groups * q.stride(1),
                     q.stride(1),
                     k_data + b * k.stride(0) + h * k.stride(1),
                     k.stride(2),
                     v_data + b * v.stride(0) + h * v.stride(1),
                     v.stride(2),
                     bias_data ? bias_data + b * bias.stride(0) : nullptr,
                     bias_data ? bias.stride(3) : 0,
                     out_data + b * out.stride(0) + h * groups * out.stride(1),
                     out.stride(1),
                     groups,
                     S,
                     D,
                     root_dim,
                     scores.data(),
                     sums.data()};
      path(job);
    }
  });
}

#undef CITEFORGE_SCORES
#if defined(CITEFORGE_X86)
#pragma GCC diagnostic pop
#endif

}  // namespace

bool decode_attention_applies(const torch::Tensor& q, const torch::Tensor& k, int64_t new_tokens,
                              bool reads_attention) {
  const auto dtype = q.scalar_type();
  return fused_decoding_enabled() && new_tokens == 1 && !reads_attention && q.device().is_cpu() &&
         (dtype == torch::kBFloat16 || dtype == torch::kFloat32) && k.scalar_type() == dtype &&
         !(torch::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad()));
}

torch::Tensor decode_attention_cpu(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const torch::Tensor& bias,
                                   int64_t groups) {
  const auto fail = [&](const std::string& what) {
    throw Error("decode attention: " + what + " (q " + shape_text(q.sizes()) + ", k " +
                shape_text(k.sizes()) + ", v " + shape_text(v.sizes()) + ")");
  };
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || q.size(2) != 1)
    fail("expected q [B, H, 1, D] and k, v [B, H / groups, S, D]");
  if (groups < 1 || q.size(1) != k.size(1) * groups || k.sizes() != v.sizes() ||
      k.size(0) != q.size(0) || k.size(3) != q.size(3))
    fail("the heads, rows or head sizes do not match for " + std::to_string(groups) + " groups");
  if (!q.device().is_cpu() || !k.device().is_cpu() || !v.device().is_cpu())
    fail("the tensors are not on the CPU");
  if (k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type())
    fail("q, k and v differ in dtype");
  const int64_t B = q.size(0), S = k.size(2);
  torch::Tensor bias_f;
  if (bias.defined()) {
    if (bias.dim() != 4 || bias.size(-1) != S || (bias.size(0) != B && bias.size(0) != 1))
      fail("expected a bias [B, 1, 1, S], got " + shape_text(bias.sizes()));
    bias_f = bias.to(torch::kFloat32).expand({B, 1, 1, S});
  }
  // The cache's slots are rows of D contiguous values, however far apart the rows are.
  const auto rows_of = [](const torch::Tensor& t) { return t.stride(3) == 1 ? t : t.contiguous(); };
  const auto qc = q.contiguous(), kc = rows_of(k), vc = rows_of(v);
  auto out = torch::empty(q.sizes(), q.options().memory_format(c10::MemoryFormat::Contiguous));
  if (q.scalar_type() == torch::kFloat32)
    run_heads<float>(qc, kc, vc, bias_f, groups, out);
  else if (q.scalar_type() == torch::kBFloat16)
    run_heads<c10::BFloat16>(qc, kc, vc, bias_f, groups, out);
  else
    fail("expected fp32 or bf16, got " + std::string(c10::toString(q.scalar_type())));
  return out;
}

}  // namespace citeforge::models
