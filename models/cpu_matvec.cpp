#include "models/cpu_matvec.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "models/model_tensors.h"

#if defined(__x86_64__) || defined(__i386__)
#define CITEFORGE_X86 1
#include <immintrin.h>
#endif

namespace citeforge::models {
namespace {

constexpr int64_t kBlock = 64;          // values per block, for the weights and the activations
constexpr float kActivationMax = 8191;  // int16 activations: |x| / block max * 8191
constexpr float kLevelScale = 16384;    // int16 NF4 levels: 2^14 * level, exact in the epilogue
constexpr float kWeightMax = 32767;     // Q16 weights: |w| / block max * 32767
constexpr int64_t kQ8Block = 32;        // Q8 weights: one scale per 32 values, as GGUF's Q8_0
constexpr float kQ8Max = 127;           // Q8 weights: |w| / block max * 127

// Inside a block the kernels keep values in "lane order", the order the 256-bit byte shuffles
// produce them in: the 32 even positions first, then the 32 odd ones, each half as element
// pairs 0-7, 16-23, 8-15, 24-31. Layout slot p holds element element_of_slot(p).
constexpr int64_t element_of_slot(int64_t p) {
  const int64_t q = p % 32;
  return 2 * ((q & 7) | ((q & 8) << 1) | ((q & 16) >> 1)) + p / 32;
}

// Where a block's activation codes go: in lane order (slot p holds element_of_slot(p)), which
// the NF4 and Q16 paths read but AVX-512's NF4 one, evens then odds (position p < 32 holds
// element 2p, p >= 32 element 2(p - 32) + 1), the order that path unpacks its nibbles in, or in
// order (the Q8 paths, whose weight codes widen in order).
enum class ActivationOrder { lanes, evens_then_odds, natural };

constexpr int64_t element_at(ActivationOrder order, int64_t p) {
  if (order == ActivationOrder::natural) return p;
  return order == ActivationOrder::lanes ? element_of_slot(p) : 2 * (p % 32) + p / 32;
}

// Every path reduces a block the same way, so all give the same bits: the products of slots p
// and p + 1 go to 32-bit lane (p % 16) / 2 (8 lanes; 8 products of at most 32767 * 8191 each,
// under 2^31, exact), each lane is converted to fp32, scaled by the weight's and the activations'
// block scales and added to that lane's fp32 sum; at the end of the row the 8 sums are added as
// ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)).
constexpr int kLanes = 8;
constexpr int64_t kMaxRows = 8;    // activation rows per kernel call (the caller splits more)
constexpr int64_t kTileRows = 32;  // output rows per kernel call

// The NF4 levels as int16, split into low and high bytes for the byte-shuffle lookups.
struct LevelTables {
  alignas(16) int16_t levels[16];
  alignas(16) uint8_t low[16];
  alignas(16) uint8_t high[16];
};

const LevelTables& level_tables() {
  static const LevelTables tables = [] {
    LevelTables t{};
    for (int c = 0; c < 16; ++c) {
      t.levels[c] = int16_t(std::lrint(nf4_codebook()[c] * kLevelScale));
      t.low[c] = uint8_t(uint16_t(t.levels[c]) & 0xff);
      t.high[c] = uint8_t(uint16_t(t.levels[c]) >> 8);
    }
    return t;
  }();
  return tables;
}

// What a row kernel computes: y[r * y_stride + j] = output row j's dot product with activation
// row r (r < rows <= kMaxRows, j < out_rows), from the rows' weight codes, their per-block scales
// (in units of one code) and the activations' int16 codes and block scales.
struct RowJob {
  const float* weight_scales;  // [out_rows, blocks]
  const int16_t* xq;           // [rows, in], lane order
  const float* x_scales;       // [rows, blocks]
  int64_t in, rows;
  float* y;
  int64_t y_stride;
  // Consecutive output rows one call computes (their codes codes_per_row apart, their outputs
  // next to each other): a call per output row cost more than a short row's arithmetic.
  int64_t out_rows = 1, codes_per_row = 0;
  int64_t scales_per_row = 0;  // in / 64, or in / 32 for a Q8 copy

  // The job of output row j alone.
  RowJob row(int64_t j) const {
    RowJob one = *this;
    one.weight_scales = weight_scales + j * scales_per_row;
    one.y = y + j;
    one.out_rows = 1;
    return one;
  }
};
template <class Code>
using RowKernel = void (*)(const Code* codes, const RowJob& job);
using Nf4RowKernel = RowKernel<uint8_t>;  // packed nibbles
using Q16RowKernel = RowKernel<int16_t>;
using Q8RowKernel = RowKernel<int8_t>;

float add_lanes(const float* s) {
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// The portable path: one block's weights in lane order as int16, then the lanes as above.
void rows_portable(const int16_t* w, int64_t b, const RowJob& job, float (*sums)[kLanes]) {
  const int64_t blocks = job.in / kBlock;
  for (int64_t r = 0; r < job.rows; ++r) {
    const int16_t* x = job.xq + r * job.in + b * kBlock;
    int32_t lanes[kLanes] = {};
    for (int p = 0; p < kBlock; ++p) lanes[(p % 16) / 2] += int32_t(w[p]) * x[p];
    const float scale = job.weight_scales[b] * job.x_scales[r * blocks + b];
    for (int l = 0; l < kLanes; ++l) sums[r][l] = sums[r][l] + float(lanes[l]) * scale;
  }
}

void finish_portable(const RowJob& job, float (*sums)[kLanes]) {
  for (int64_t r = 0; r < job.rows; ++r) job.y[r * job.y_stride] = add_lanes(sums[r]);
}

inline void nf4_row_portable_one(const uint8_t* packed, const RowJob& job) {
  const int16_t* levels = level_tables().levels;
  float sums[kMaxRows][kLanes] = {};
  int16_t w[kBlock];
  for (int64_t b = 0; b < job.in / kBlock; ++b) {
    for (int p = 0; p < kBlock; ++p) {
      const int64_t e = element_of_slot(p);
      const uint8_t byte = packed[b * kBlock / 2 + e / 2];
      w[p] = levels[e % 2 ? byte & 15 : byte >> 4];  // element 2i in the high nibble
    }
    rows_portable(w, b, job, sums);
  }
  finish_portable(job, sums);
}

void nf4_row_portable(const uint8_t* packed, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    nf4_row_portable_one(packed + j * job.codes_per_row, job.row(j));
}

inline void q16_row_portable_one(const int16_t* codes, const RowJob& job) {
  float sums[kMaxRows][kLanes] = {};
  for (int64_t b = 0; b < job.in / kBlock; ++b) {
    rows_portable(codes + b * kBlock, b, job, sums);
  }
  finish_portable(job, sums);
}

void q16_row_portable(const int16_t* codes, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    q16_row_portable_one(codes + j * job.codes_per_row, job.row(j));
}

// Q8 (activations and codes in order): each half of an activation block meets one block of 32
// weight codes. Each half's 8 lanes (the products of positions p and p + 1 in lane (p % 16) / 2,
// as above) are converted to fp32 and scaled by that half's weight scale, the two halves added,
// and only then scaled by the activations' block scale and added to the lane sums: the weight
// scales are the same for every activation row, so a path applies them once a block.
inline void q8_row_portable_one(const int8_t* codes, const RowJob& job) {
  const int64_t blocks = job.in / kBlock;
  float sums[kMaxRows][kLanes] = {};
  for (int64_t b = 0; b < blocks; ++b) {
    const int8_t* w = codes + b * kBlock;
    const float ws0 = job.weight_scales[2 * b], ws1 = job.weight_scales[2 * b + 1];
    for (int64_t r = 0; r < job.rows; ++r) {
      const int16_t* x = job.xq + r * job.in + b * kBlock;
      int32_t low[kLanes] = {}, high[kLanes] = {};
      for (int p = 0; p < kQ8Block; ++p) low[(p % 16) / 2] += int32_t(w[p]) * x[p];
      for (int p = 0; p < kQ8Block; ++p)
        high[(p % 16) / 2] += int32_t(w[kQ8Block + p]) * x[kQ8Block + p];
      const float xs = job.x_scales[r * blocks + b];
      for (int l = 0; l < kLanes; ++l)
        sums[r][l] = sums[r][l] + (float(low[l]) * ws0 + float(high[l]) * ws1) * xs;
    }
  }
  finish_portable(job, sums);
}

void q8_row_portable(const int8_t* codes, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    q8_row_portable_one(codes + j * job.codes_per_row, job.row(j));
}

#if defined(CITEFORGE_X86)

// The SIMD paths are templates over the number of activation rows, so that each row's lane sums
// stay in registers across the blocks of a weight row.
#define CITEFORGE_INLINE __attribute__((always_inline)) inline
#define CITEFORGE_SSE41 __attribute__((target("sse4.1")))
#define CITEFORGE_AVX2 __attribute__((target("avx2")))

// SSE4.1 (with SSSE3's byte shuffle): every x86-64 CPU of the last 15 years. Lanes 0-3 are
// sums[r][0], lanes 4-7 sums[r][1]; w[k] holds slots 8k to 8k + 7.
template <int R>
CITEFORGE_SSE41 CITEFORGE_INLINE void rows_sse41(const __m128i* w, int64_t b, const RowJob& job,
                                                 __m128 (&sums)[R][2]) {
  const int64_t blocks = job.in / kBlock;
  for (int r = 0; r < R; ++r) {
    const __m128i* x = reinterpret_cast<const __m128i*>(job.xq + r * job.in + b * kBlock);
    __m128i low = _mm_madd_epi16(w[0], _mm_loadu_si128(x));
    __m128i high = _mm_madd_epi16(w[1], _mm_loadu_si128(x + 1));
    for (int k = 2; k < 8; k += 2) {
      low = _mm_add_epi32(low, _mm_madd_epi16(w[k], _mm_loadu_si128(x + k)));
      high = _mm_add_epi32(high, _mm_madd_epi16(w[k + 1], _mm_loadu_si128(x + k + 1)));
    }
    const __m128 scale = _mm_set1_ps(job.weight_scales[b] * job.x_scales[r * blocks + b]);
    sums[r][0] = _mm_add_ps(sums[r][0], _mm_mul_ps(_mm_cvtepi32_ps(low), scale));
    sums[r][1] = _mm_add_ps(sums[r][1], _mm_mul_ps(_mm_cvtepi32_ps(high), scale));
  }
}

template <int R>
CITEFORGE_SSE41 CITEFORGE_INLINE void finish_sse41(const RowJob& job, __m128 (&sums)[R][2]) {
  for (int r = 0; r < R; ++r) {
    const __m128 t = _mm_add_ps(sums[r][0], sums[r][1]);  // s0+s4, s1+s5, s2+s6, s3+s7
    const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));  // (s0+s4)+(s2+s6), (s1+s5)+(s3+s7)
    job.y[r * job.y_stride] = _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
  }
}

// 16 nibble codes to their 16 int16 levels: codes 0-7 in `first`, 8-15 in `second`.
CITEFORGE_SSE41 CITEFORGE_INLINE void lookup_levels_sse(__m128i codes, __m128i low, __m128i high,
                                                        __m128i& first, __m128i& second) {
  const __m128i l = _mm_shuffle_epi8(low, codes), h = _mm_shuffle_epi8(high, codes);
  first = _mm_unpacklo_epi8(l, h);
  second = _mm_unpackhi_epi8(l, h);
}

template <int R>
CITEFORGE_SSE41 CITEFORGE_INLINE void nf4_row_sse41_one(const uint8_t* packed, const RowJob& job) {
  const LevelTables& t = level_tables();
  const __m128i low = _mm_load_si128(reinterpret_cast<const __m128i*>(t.low));
  const __m128i high = _mm_load_si128(reinterpret_cast<const __m128i*>(t.high));
  const __m128i nibble = _mm_set1_epi8(15);
  __m128 sums[R][2];
  for (int r = 0; r < R; ++r) sums[r][0] = sums[r][1] = _mm_setzero_ps();
  for (int64_t b = 0; b < job.in / kBlock; ++b) {
    // Bytes 0-15 hold element pairs 0-15, bytes 16-31 pairs 16-31; even elements in the high
    // nibbles. Pairs 0-7 go to slots 0-7, 16-23 to 8-15, 8-15 to 16-23, 24-31 to 24-31.
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + b * 32));
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + b * 32 + 16));
    __m128i w[8];
    lookup_levels_sse(_mm_and_si128(_mm_srli_epi16(v0, 4), nibble), low, high, w[0], w[2]);
    lookup_levels_sse(_mm_and_si128(_mm_srli_epi16(v1, 4), nibble), low, high, w[1], w[3]);
    lookup_levels_sse(_mm_and_si128(v0, nibble), low, high, w[4], w[6]);
    lookup_levels_sse(_mm_and_si128(v1, nibble), low, high, w[5], w[7]);
    rows_sse41<R>(w, b, job, sums);
  }
  finish_sse41<R>(job, sums);
}

template <int R>
CITEFORGE_SSE41 void nf4_row_sse41(const uint8_t* packed, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    nf4_row_sse41_one<R>(packed + j * job.codes_per_row, job.row(j));
}

template <int R>
CITEFORGE_SSE41 CITEFORGE_INLINE void q16_row_sse41_one(const int16_t* codes, const RowJob& job) {
  __m128 sums[R][2];
  for (int r = 0; r < R; ++r) sums[r][0] = sums[r][1] = _mm_setzero_ps();
  for (int64_t b = 0; b < job.in / kBlock; ++b) {
    __m128i w[8];
    for (int k = 0; k < 8; ++k)
      w[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + b * kBlock + 8 * k));
    rows_sse41<R>(w, b, job, sums);
  }
  finish_sse41<R>(job, sums);
}

template <int R>
CITEFORGE_SSE41 void q16_row_sse41(const int16_t* codes, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    q16_row_sse41_one<R>(codes + j * job.codes_per_row, job.row(j));
}

// Q8 on SSE4.1: codes 8k to 8k + 7 of a half widen to one register, whose pairs are lanes 0-3
// (k even) or 4-7 (k odd).
template <int R>
CITEFORGE_SSE41 CITEFORGE_INLINE void q8_row_sse41_one(const int8_t* codes, const RowJob& job) {
  const int64_t blocks = job.in / kBlock;
  __m128 sums[R][2];
  for (int r = 0; r < R; ++r) sums[r][0] = sums[r][1] = _mm_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m128i w[8];  // w[4h + k]: codes 8k to 8k + 7 of half h
    for (int k = 0; k < 8; ++k)
      w[k] = _mm_cvtepi8_epi16(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + b * kBlock + 8 * k)));
    const __m128 ws0 = _mm_set1_ps(job.weight_scales[2 * b]);
    const __m128 ws1 = _mm_set1_ps(job.weight_scales[2 * b + 1]);
    for (int r = 0; r < R; ++r) {
      const __m128i* x = reinterpret_cast<const __m128i*>(job.xq + r * job.in + b * kBlock);
      __m128 half[2][2];  // [h][lanes 0-3, 4-7]
      for (int h = 0; h < 2; ++h) {
        const __m128i* xh = x + 4 * h;
        const __m128i* wh = w + 4 * h;
        const __m128i low = _mm_add_epi32(_mm_madd_epi16(wh[0], _mm_loadu_si128(xh)),
                                          _mm_madd_epi16(wh[2], _mm_loadu_si128(xh + 2)));
        const __m128i high = _mm_add_epi32(_mm_madd_epi16(wh[1], _mm_loadu_si128(xh + 1)),
                                           _mm_madd_epi16(wh[3], _mm_loadu_si128(xh + 3)));
        const __m128 ws = h == 0 ? ws0 : ws1;
        half[h][0] = _mm_mul_ps(_mm_cvtepi32_ps(low), ws);
        half[h][1] = _mm_mul_ps(_mm_cvtepi32_ps(high), ws);
      }
      const __m128 xs = _mm_set1_ps(job.x_scales[r * blocks + b]);
      for (int c = 0; c < 2; ++c)
        sums[r][c] = _mm_add_ps(sums[r][c], _mm_mul_ps(_mm_add_ps(half[0][c], half[1][c]), xs));
    }
  }
  finish_sse41<R>(job, sums);
}

template <int R>
CITEFORGE_SSE41 void q8_row_sse41(const int8_t* codes, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    q8_row_sse41_one<R>(codes + j * job.codes_per_row, job.row(j));
}

// The activation rows' block scales times the weight's for blocks b0 to b0 + 7 (fewer at the
// row's end): the product every path rounds once in fp32, here eight at a time, so each block
// then loads its scale broadcast instead of multiplying two scalars.
constexpr int64_t kScaleGroup = 8;
template <int R>
CITEFORGE_AVX2 CITEFORGE_INLINE void block_scales_avx2(const RowJob& job, int64_t b0,
                                                       float (&scales)[R][kScaleGroup]) {
  const int64_t blocks = job.in / kBlock, n = std::min(kScaleGroup, blocks - b0);
  if (n == kScaleGroup) {
    const __m256 ws = _mm256_loadu_ps(job.weight_scales + b0);
    for (int r = 0; r < R; ++r)
      _mm256_storeu_ps(scales[r],
                       _mm256_mul_ps(ws, _mm256_loadu_ps(job.x_scales + r * blocks + b0)));
    return;
  }
  for (int r = 0; r < R; ++r)
    for (int64_t k = 0; k < n; ++k)
      scales[r][k] = job.weight_scales[b0 + k] * job.x_scales[r * blocks + b0 + k];
}

// AVX2: w[c] holds slots 16c to 16c + 15, whose pairs are exactly the 8 lanes. No FMA: the
// multiply and the add round separately, as on the other paths. `k` is block b's place in its
// group of scales.
template <int R>
CITEFORGE_AVX2 CITEFORGE_INLINE void rows_avx2(const __m256i* w, int64_t b, const RowJob& job,
                                               const float (&scales)[R][kScaleGroup], int64_t k,
                                               __m256 (&sums)[R]) {
  for (int r = 0; r < R; ++r) {
    const __m256i* x = reinterpret_cast<const __m256i*>(job.xq + r * job.in + b * kBlock);
    const __m256i a = _mm256_add_epi32(_mm256_madd_epi16(w[0], _mm256_loadu_si256(x)),
                                       _mm256_madd_epi16(w[1], _mm256_loadu_si256(x + 1)));
    const __m256i c = _mm256_add_epi32(_mm256_madd_epi16(w[2], _mm256_loadu_si256(x + 2)),
                                       _mm256_madd_epi16(w[3], _mm256_loadu_si256(x + 3)));
    const __m256 scale = _mm256_broadcast_ss(&scales[r][k]);
    sums[r] =
        _mm256_add_ps(sums[r], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(a, c)), scale));
  }
}

template <int R>
CITEFORGE_AVX2 CITEFORGE_INLINE void finish_avx2(const RowJob& job, const __m256 (&sums)[R]) {
  for (int r = 0; r < R; ++r) {
    const __m128 t = _mm_add_ps(_mm256_castps256_ps128(sums[r]), _mm256_extractf128_ps(sums[r], 1));
    const __m128 u = _mm_add_ps(t, _mm_movehl_ps(t, t));
    job.y[r * job.y_stride] = _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps(u, u, 1)));
  }
}

// `low` and `high`: the levels' low and high bytes in both 128-bit halves.
template <int R>
CITEFORGE_AVX2 CITEFORGE_INLINE void nf4_row_avx2_one(const uint8_t* packed, const RowJob& job,
                                                      __m256i low, __m256i high) {
  const __m256i nibble = _mm256_set1_epi8(15);
  const int64_t blocks = job.in / kBlock;
  __m256 sums[R];
  for (int r = 0; r < R; ++r) sums[r] = _mm256_setzero_ps();
  for (int64_t b0 = 0; b0 < blocks; b0 += kScaleGroup) {
    float scales[R][kScaleGroup];
    block_scales_avx2<R>(job, b0, scales);
    for (int64_t b = b0; b < std::min(b0 + kScaleGroup, blocks); ++b) {
      // The shuffles and unpacks work within each 128-bit half (pairs 0-15 | 16-31), which
      // yields the lane order directly: [0-7 | 16-23] and [8-15 | 24-31].
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed + b * 32));
      const __m256i even = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      const __m256i odd = _mm256_and_si256(v, nibble);
      const __m256i el = _mm256_shuffle_epi8(low, even), eh = _mm256_shuffle_epi8(high, even);
      const __m256i ol = _mm256_shuffle_epi8(low, odd), oh = _mm256_shuffle_epi8(high, odd);
      const __m256i w[4] = {_mm256_unpacklo_epi8(el, eh), _mm256_unpackhi_epi8(el, eh),
                            _mm256_unpacklo_epi8(ol, oh), _mm256_unpackhi_epi8(ol, oh)};
      rows_avx2<R>(w, b, job, scales, b - b0, sums);
    }
  }
  finish_avx2<R>(job, sums);
}

template <int R>
CITEFORGE_AVX2 void nf4_row_avx2(const uint8_t* packed, const RowJob& job) {
  const LevelTables& t = level_tables();
  const __m256i low =
      _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.low)));
  const __m256i high =
      _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.high)));
  for (int64_t j = 0; j < job.out_rows; ++j)
    nf4_row_avx2_one<R>(packed + j * job.codes_per_row, job.row(j), low, high);
}

template <int R>
CITEFORGE_AVX2 CITEFORGE_INLINE void q16_row_avx2_one(const int16_t* codes, const RowJob& job) {
  const int64_t blocks = job.in / kBlock;
  __m256 sums[R];
  for (int r = 0; r < R; ++r) sums[r] = _mm256_setzero_ps();
  for (int64_t b0 = 0; b0 < blocks; b0 += kScaleGroup) {
    float scales[R][kScaleGroup];
    block_scales_avx2<R>(job, b0, scales);
    for (int64_t b = b0; b < std::min(b0 + kScaleGroup, blocks); ++b) {
      __m256i w[4];
      for (int c = 0; c < 4; ++c)
        w[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + b * kBlock + 16 * c));
      rows_avx2<R>(w, b, job, scales, b - b0, sums);
    }
  }
  finish_avx2<R>(job, sums);
}

template <int R>
CITEFORGE_AVX2 void q16_row_avx2(const int16_t* codes, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    q16_row_avx2_one<R>(codes + j * job.codes_per_row, job.row(j));
}

// Q8 on AVX2: a half's 32 codes widen to two registers of 16, whose pairs are the 8 lanes.
// AVX-512 CPUs run this path too: its bytes, not its arithmetic, bound the output layer.
template <int R>
CITEFORGE_AVX2 CITEFORGE_INLINE void q8_row_avx2_one(const int8_t* codes, const RowJob& job) {
  const int64_t blocks = job.in / kBlock;
  __m256 sums[R];
  for (int r = 0; r < R; ++r) sums[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const __m128i* c = reinterpret_cast<const __m128i*>(codes + b * kBlock);
    const __m256i w[4] = {
        _mm256_cvtepi8_epi16(_mm_loadu_si128(c)), _mm256_cvtepi8_epi16(_mm_loadu_si128(c + 1)),
        _mm256_cvtepi8_epi16(_mm_loadu_si128(c + 2)), _mm256_cvtepi8_epi16(_mm_loadu_si128(c + 3))};
    const __m256 ws0 = _mm256_set1_ps(job.weight_scales[2 * b]);
    const __m256 ws1 = _mm256_set1_ps(job.weight_scales[2 * b + 1]);
    for (int r = 0; r < R; ++r) {
      const __m256i* x = reinterpret_cast<const __m256i*>(job.xq + r * job.in + b * kBlock);
      const __m256i low = _mm256_add_epi32(_mm256_madd_epi16(w[0], _mm256_loadu_si256(x)),
                                           _mm256_madd_epi16(w[1], _mm256_loadu_si256(x + 1)));
      const __m256i high = _mm256_add_epi32(_mm256_madd_epi16(w[2], _mm256_loadu_si256(x + 2)),
                                            _mm256_madd_epi16(w[3], _mm256_loadu_si256(x + 3)));
      const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(low), ws0),
                                     _mm256_mul_ps(_mm256_cvtepi32_ps(high), ws1));
      const __m256 xs = _mm256_set1_ps(job.x_scales[r * blocks + b]);
      sums[r] = _mm256_add_ps(sums[r], _mm256_mul_ps(v, xs));
    }
  }
  finish_avx2<R>(job, sums);
}

template <int R>
CITEFORGE_AVX2 void q8_row_avx2(const int8_t* codes, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    q8_row_avx2_one<R>(codes + j * job.codes_per_row, job.row(j));
}

// AVX-512 (F + BW): a block's 64 products in two 512-bit multiply-adds, folded to the 8 lanes
// of the other paths by exact integer adds, then the same fp32 epilogue as AVX2 on 256 bits.
#define CITEFORGE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
// GCC 12's AVX-512 intrinsics start many results from `_mm512_undefined_*` (x = x), which
// -Wmaybe-uninitialized reports at every inlined use: a false positive of the headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The NF4 path unpacks a block's 32 bytes into 32 words, the high nibbles (even elements) and
// the low ones (odd elements) each looked up in the 16 levels by one word permute, so its
// activations are laid out evens then odds (kEvenOddOrder). Then int32 lane j of the two
// multiply-adds' sum holds elements 4j to 4j + 3 (group j), and lane l of the other paths holds
// groups l and l + 4 (l < 4) or l + 4 and l + 8 (l >= 4): 128-bit chunks [0 + 1, 2 + 3].
// Slots (Q16, lane order): lane j holds slots 2j, 2j + 1, 2j + 32, 2j + 33, and lanes j and
// j + 8 make lane j of the others: chunks [0 + 2, 1 + 3].
//
// Activation rows go in pairs: one 512-bit register holds the 8 lane sums of row 2p in its low
// half and those of row 2p + 1 in its high half, so the fold to 8 lanes, the conversion, the
// scaling and the add take one instruction for two rows. Each half does exactly the arithmetic
// of a row on the other paths, so the bits are the same. An odd last row goes alone.
template <bool Groups>
CITEFORGE_AVX512 CITEFORGE_INLINE __m512i fold_pair_avx512(__m512i s0, __m512i s1) {
  // 128-bit chunks [s0: 0 + 1, 2 + 3 | s1: 0 + 1, 2 + 3] (groups) or [0 + 2, 1 + 3 | ...].
  if constexpr (Groups)
    return _mm512_add_epi32(_mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(3, 1, 3, 1)));
  else
    return _mm512_add_epi32(_mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(3, 2, 3, 2)));
}

CITEFORGE_AVX512 CITEFORGE_INLINE __m512i products_avx512(__m512i we, __m512i wo,
                                                          const int16_t* x) {
  const __m512i* v = reinterpret_cast<const __m512i*>(x);
  return _mm512_add_epi32(_mm512_madd_epi16(we, _mm512_loadu_si512(v)),
                          _mm512_madd_epi16(wo, _mm512_loadu_si512(v + 1)));
}

// Accumulators of R rows: (R + 1) / 2 pairs, the last one's high half unused where R is odd.
template <int R>
using PairSums = __m512[(R + 1) / 2];

template <int R, bool Groups>
CITEFORGE_AVX512 CITEFORGE_INLINE void rows_avx512(__m512i we, __m512i wo, int64_t b,
                                                   const RowJob& job, PairSums<R>& sums) {
  const int64_t blocks = job.in / kBlock;
  const float ws = job.weight_scales[b];
  const int16_t* x = job.xq + b * kBlock;
  const float* xs = job.x_scales + b;
  for (int p = 0; p < R / 2; ++p) {
    const int r = 2 * p;
    const __m512i lanes = fold_pair_avx512<Groups>(products_avx512(we, wo, x + r * job.in),
                                                   products_avx512(we, wo, x + (r + 1) * job.in));
    const __m512 scale = _mm512_insertf32x8(_mm512_set1_ps(ws * xs[r * blocks]),
                                            _mm256_set1_ps(ws * xs[(r + 1) * blocks]), 1);
    sums[p] = _mm512_add_ps(sums[p], _mm512_mul_ps(_mm512_cvtepi32_ps(lanes), scale));
  }
  if constexpr (R % 2 == 1) {
    const int r = R - 1;
    const __m512i s = products_avx512(we, wo, x + r * job.in);
    const __m512i t = Groups ? _mm512_shuffle_i32x4(s, s, _MM_SHUFFLE(3, 1, 2, 0)) : s;
    const __m256i lanes =
        _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
    const __m256 scale = _mm256_set1_ps(ws * xs[r * blocks]);
    const __m256 sum = _mm256_add_ps(_mm512_castps512_ps256(sums[R / 2]),
                                     _mm256_mul_ps(_mm256_cvtepi32_ps(lanes), scale));
    sums[R / 2] = _mm512_castps256_ps512(sum);
  }
}

template <int R>
CITEFORGE_AVX512 CITEFORGE_INLINE void finish_avx512(const RowJob& job, const PairSums<R>& sums) {
  __m256 rows[R];
  for (int r = 0; r < R; ++r)
    rows[r] =
        r % 2 == 0 ? _mm512_castps512_ps256(sums[r / 2]) : _mm512_extractf32x8_ps(sums[r / 2], 1);
  finish_avx2<R>(job, rows);
}

template <int R>
CITEFORGE_AVX512 CITEFORGE_INLINE void nf4_row_avx512_one(const uint8_t* packed,
                                                          const RowJob& job) {
  const __m512i levels = _mm512_castsi256_si512(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(level_tables().levels)));
  const __m512i nibble = _mm512_set1_epi16(15);
  PairSums<R> sums;
  for (auto& s : sums) s = _mm512_setzero_ps();
  for (int64_t b = 0; b < job.in / kBlock; ++b) {
    const __m512i v =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed + b * 32)));
    // Word i holds byte i: element 2i in its high nibble, 2i + 1 in its low one.
    const __m512i we = _mm512_permutexvar_epi16(_mm512_srli_epi16(v, 4), levels);
    const __m512i wo = _mm512_permutexvar_epi16(_mm512_and_si512(v, nibble), levels);
    rows_avx512<R, true>(we, wo, b, job, sums);
  }
  finish_avx512<R>(job, sums);
}

template <int R>
CITEFORGE_AVX512 void nf4_row_avx512(const uint8_t* packed, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    nf4_row_avx512_one<R>(packed + j * job.codes_per_row, job.row(j));
}

template <int R>
CITEFORGE_AVX512 CITEFORGE_INLINE void q16_row_avx512_one(const int16_t* codes, const RowJob& job) {
  PairSums<R> sums;
  for (auto& s : sums) s = _mm512_setzero_ps();
  for (int64_t b = 0; b < job.in / kBlock; ++b) {
    const __m512i* w = reinterpret_cast<const __m512i*>(codes + b * kBlock);
    rows_avx512<R, false>(_mm512_loadu_si512(w), _mm512_loadu_si512(w + 1), b, job, sums);
  }
  finish_avx512<R>(job, sums);
}

template <int R>
CITEFORGE_AVX512 void q16_row_avx512(const int16_t* codes, const RowJob& job) {
  for (int64_t j = 0; j < job.out_rows; ++j)
    q16_row_avx512_one<R>(codes + j * job.codes_per_row, job.row(j));
}

#pragma GCC diagnostic pop

#endif  // CITEFORGE_X86

std::atomic<int> forced_isa{-1};

// The instantiation of `Rows` for 1 to kMaxRows activation rows (more take kMaxRows at a time).
template <class Kernel, template <int> class Rows, size_t... I>
Kernel by_rows(int64_t rows, std::index_sequence<I...>) {
  static constexpr Kernel kernels[] = {Rows<int(I) + 1>::kernel...};
  return kernels[std::clamp<int64_t>(rows, 1, kMaxRows) - 1];
}
template <class Kernel, template <int> class Rows>
Kernel by_rows(int64_t rows) {
  return by_rows<Kernel, Rows>(rows, std::make_index_sequence<kMaxRows>());
}

#if defined(CITEFORGE_X86)
template <int R>
struct Nf4Sse41 {
  static constexpr Nf4RowKernel kernel = nf4_row_sse41<R>;
};
template <int R>
struct Nf4Avx2 {
  static constexpr Nf4RowKernel kernel = nf4_row_avx2<R>;
};
template <int R>
struct Q16Sse41 {
  static constexpr Q16RowKernel kernel = q16_row_sse41<R>;
};
template <int R>
struct Q16Avx2 {
  static constexpr Q16RowKernel kernel = q16_row_avx2<R>;
};
template <int R>
struct Q8Sse41 {
  static constexpr Q8RowKernel kernel = q8_row_sse41<R>;
};
template <int R>
struct Q8Avx2 {
  static constexpr Q8RowKernel kernel = q8_row_avx2<R>;
};
template <int R>
struct Nf4Avx512 {
  static constexpr Nf4RowKernel kernel = nf4_row_avx512<R>;
};
template <int R>
struct Q16Avx512 {
  static constexpr Q16RowKernel kernel = q16_row_avx512<R>;
};
#endif

Nf4RowKernel nf4_kernel(CpuIsa isa, int64_t rows) {
#if defined(CITEFORGE_X86)
  if (isa == CpuIsa::avx512) return by_rows<Nf4RowKernel, Nf4Avx512>(rows);
  if (isa == CpuIsa::avx2) return by_rows<Nf4RowKernel, Nf4Avx2>(rows);
  if (isa == CpuIsa::sse41) return by_rows<Nf4RowKernel, Nf4Sse41>(rows);
#endif
  (void)isa, (void)rows;
  return nf4_row_portable;
}

ActivationOrder nf4_activation_order(CpuIsa isa) {
  return isa == CpuIsa::avx512 ? ActivationOrder::evens_then_odds : ActivationOrder::lanes;
}

Q16RowKernel q16_kernel(CpuIsa isa, int64_t rows) {
#if defined(CITEFORGE_X86)
  if (isa == CpuIsa::avx512) return by_rows<Q16RowKernel, Q16Avx512>(rows);
  if (isa == CpuIsa::avx2) return by_rows<Q16RowKernel, Q16Avx2>(rows);
  if (isa == CpuIsa::sse41) return by_rows<Q16RowKernel, Q16Sse41>(rows);
#endif
  (void)isa, (void)rows;
  return q16_row_portable;
}

Q8RowKernel q8_kernel(CpuIsa isa, int64_t rows) {
#if defined(CITEFORGE_X86)
  if (isa == CpuIsa::avx512 || isa == CpuIsa::avx2) return by_rows<Q8RowKernel, Q8Avx2>(rows);
  if (isa == CpuIsa::sse41) return by_rows<Q8RowKernel, Q8Sse41>(rows);
#endif
  (void)isa, (void)rows;
  return q8_row_portable;
}

// std::lrint(v) for the activations' codes, a decoding step's most frequent rounding: GCC leaves
// std::lrint a library call (it may set errno), where x86 has one instruction that rounds by the
// same mode (MXCSR, which fesetround sets together with the x87 one). |v| <= 8191 here.
inline int32_t round_to_int(float v) {
#if defined(CITEFORGE_X86)
  return _mm_cvtss_si32(_mm_set_ss(v));
#else
  return int32_t(std::lrint(v));
#endif
}

// The activation rows as int16 codes with one fp32 scale per block of 64 (block max / 8191),
// each block in `order`. A block holding a non-finite value
// gets codes 0 and a NaN scale, so its outputs come out NaN, never a finite guess.
struct QuantizedRows {
  std::vector<int16_t> codes;  // [rows, in]
  std::vector<float> scales;   // [rows, in / 64]
};

// Rows in parallel where there are enough of them (a batched decoding step's): each row's codes
// depend on that row alone. `T` is float or bf16, read as the float it is exactly, so a bf16
// caller needs no converted copy.
template <class T>
QuantizedRows quantize_rows(const T* x, int64_t rows, int64_t in, ActivationOrder order) {
  const int64_t blocks = in / kBlock;
  int64_t element[kBlock];
  for (int64_t p = 0; p < kBlock; ++p) element[p] = element_at(order, p);
  QuantizedRows q{std::vector<int16_t>(size_t(rows * in)),
                  std::vector<float>(size_t(rows * blocks))};
  const int64_t grain = std::max<int64_t>(1, 16384 / in);
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    float v[kBlock];
    for (int64_t r = begin; r < end; ++r)
      for (int64_t b = 0; b < blocks; ++b) {
        const T* block = x + r * in + b * kBlock;
        float max = 0;
        bool finite = true;  // |v| <= FLT_MAX is false for NaN too; no branch, so it vectorises
        for (int j = 0; j < kBlock; ++j) {
          v[j] = float(block[j]);
          const float magnitude = std::fabs(v[j]);
          finite &= magnitude <= std::numeric_limits<float>::max();
          max = std::max(max, magnitude);
        }
        int16_t* codes = q.codes.data() + r * in + b * kBlock;
        if (!finite) {
          q.scales[size_t(r * blocks + b)] = std::numeric_limits<float>::quiet_NaN();
          continue;  // codes stay 0
        }
        q.scales[size_t(r * blocks + b)] = max / kActivationMax;
        if (max == 0) continue;
        const float inverse = kActivationMax / max;
        for (int p = 0; p < kBlock; ++p) codes[p] = int16_t(round_to_int(v[element[p]] * inverse));
      }
  });
  return q;
}

// Whether a weight of `dims` dimensions and `in` inputs is [out, in] with whole blocks in each
// row, so that no block straddles two rows.
bool whole_blocks_per_row(int64_t dims, int64_t in) {
  return dims == 2 && in > 0 && in % kBlock == 0;
}
bool whole_blocks_per_row(const torch::Tensor& weight) {
  return whole_blocks_per_row(weight.dim(), weight.dim() == 2 ? weight.size(1) : 0);
}

// The check before a dense weight's decoding copy (Q16 or Q8) is made: an Error naming `what`.
void require_whole_blocks(const torch::Tensor& weight, const std::string& what) {
  if (!whole_blocks_per_row(weight))
    throw Error(what + ": expected [out, in] with in a multiple of 64, got " +
                shape_text(weight.sizes()));
}

void check_input(const torch::Tensor& x, int64_t in, const char* what) {
  if (!x.device().is_cpu()) throw Error(std::string(what) + ": the activations are not on the CPU");
  if (x.size(-1) != in)
    throw Error(std::string(what) + ": activations of width " + std::to_string(x.size(-1)) +
                " for a weight of " + std::to_string(in) + " inputs");
}

// One weight of a run_rows call: its output rows, their codes and block scales.
template <class Code>
struct WeightRows {
  int64_t out;
  const Code* codes;
  const float* weight_scales;
};

// x times each weight's transpose, all with `in` inputs: runs the row kernel `pick` gives for
// this CPU over every output row (`codes_per_row` codes and `in / 64` block scales each), with the
// activations rounded once and all the weights' output rows in one parallel loop (a layer's q,
// k and v projections share their input and one fork and join), kTileRows output rows and at most
// kMaxRows activation rows a call; each output row is computed as a lone weight's would be.
// `order(isa)` is the activation order the path's kernel reads.
template <class Code>
std::vector<torch::Tensor> run_rows(const torch::Tensor& x, int64_t in,
                                    const std::vector<WeightRows<Code>>& weights,
                                    int64_t codes_per_row, int64_t scales_per_row,
                                    RowKernel<Code> (*pick)(CpuIsa, int64_t),
                                    ActivationOrder (*order)(CpuIsa)) {
  // Chosen once per call: every chunk of activation rows has kMaxRows of them but the last.
  const CpuIsa isa = active_cpu_isa();
  const bool bf16 = x.scalar_type() == torch::kBFloat16;
  const auto xc = bf16 ? x.contiguous() : x.to(torch::kFloat32).contiguous();
  const int64_t rows = xc.numel() / in, blocks = in / kBlock;
  const QuantizedRows q = bf16 ? quantize_rows(xc.data_ptr<c10::BFloat16>(), rows, in, order(isa))
                               : quantize_rows(xc.data_ptr<float>(), rows, in, order(isa));
  const RowKernel<Code> full = pick(isa, kMaxRows);
  const RowKernel<Code> last = pick(isa, rows - (rows - 1) / kMaxRows * kMaxRows);
  // The kernels write fp32; a bf16 caller gets each tile converted as it is done, from a
  // buffer, instead of a whole fp32 result and a conversion operator after it.
  std::vector<torch::Tensor> ys;
  std::vector<float*> y_data;
  std::vector<int64_t> first_row;  // of each weight in the loop's range of all output rows
  int64_t total = 0;
  for (const auto& w : weights) {
    auto sizes = x.sizes().vec();
    sizes.back() = w.out;
    ys.push_back(torch::empty(sizes, x.options().dtype(bf16 ? torch::kBFloat16 : torch::kFloat32)));
    first_row.push_back(total);
    total += w.out;
  }
  std::vector<float> buffer(bf16 ? size_t(rows * total) : 0);
  std::vector<c10::BFloat16*> y_bf16(weights.size(), nullptr);
  for (size_t i = 0; i < weights.size(); ++i) {
    y_data.push_back(bf16 ? buffer.data() + rows * first_row[i] : ys[i].data_ptr<float>());
    if (bf16) y_bf16[i] = ys[i].data_ptr<c10::BFloat16>();
  }
  const int64_t grain = std::max<int64_t>(1, 32768 / in);
  at::parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
    for (size_t i = 0; i < weights.size(); ++i) {
      const WeightRows<Code>& w = weights[i];
      const int64_t from = std::max(begin, first_row[i]) - first_row[i];
      const int64_t to = std::min(end, first_row[i] + w.out) - first_row[i];
      float* y = y_data[i];
      for (int64_t o = from; o < to; o += kTileRows) {
        const int64_t n_out = std::min(kTileRows, to - o);
        for (int64_t r0 = 0; r0 < rows; r0 += kMaxRows) {
          const int64_t n = std::min(kMaxRows, rows - r0);
          (n == kMaxRows ? full : last)(
              w.codes + o * codes_per_row,
              RowJob{w.weight_scales + o * scales_per_row, q.codes.data() + r0 * in,
                     q.scales.data() + r0 * blocks, in, n, y + r0 * w.out + o, w.out, n_out,
                     codes_per_row, scales_per_row});
        }
        if (!bf16) continue;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = o; j < o + n_out; ++j)
            y_bf16[i][r * w.out + j] = c10::BFloat16(y[r * w.out + j]);
      }
    }
  });
  if (x.scalar_type() != torch::kFloat32 && !bf16)
    for (auto& y : ys) y = y.to(x.scalar_type());
  return ys;
}

}  // namespace

std::string cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx512:
      return "avx512";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::sse41:
      return "sse4.1";
    default:
      return "portable";
  }
}

CpuIsa detected_cpu_isa() {
#if defined(CITEFORGE_X86)
  static const CpuIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
      return CpuIsa::avx512;
    if (__builtin_cpu_supports("avx2")) return CpuIsa::avx2;
    if (__builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3")) return CpuIsa::sse41;
    return CpuIsa::portable;
  }();
  return isa;
#else
  return CpuIsa::portable;
#endif
}

int cpu_kernel_threads() {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  const int64_t n = at::get_num_threads();
  at::parallel_for(0, n, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  return int(threads.size());
}

CpuIsa active_cpu_isa() {
  const int forced = forced_isa.load();
  return forced < 0 ? detected_cpu_isa() : CpuIsa(forced);
}

void force_cpu_isa(std::optional<CpuIsa> isa) {
  if (isa && int(*isa) > int(detected_cpu_isa()))
    throw Error("cpu kernels: this CPU cannot run the " + cpu_isa_name(*isa) + " path (it has " +
                cpu_isa_name(detected_cpu_isa()) + ")");
  forced_isa.store(isa ? int(*isa) : -1);
}

Q16Weight q16_quantize(const torch::Tensor& weight) {
  require_whole_blocks(weight, "q16 weight");
  torch::NoGradGuard no_grad;
  const int64_t out = weight.size(0), in = weight.size(1), blocks = in / kBlock;
  auto w = weight.detach().to(torch::kCPU, torch::kFloat32).reshape({out, blocks, kBlock});
  auto scales = w.abs().amax(2) / kWeightMax;
  auto codes =
      torch::round(w / scales.clamp_min(1e-30f).unsqueeze(2)).clamp(-kWeightMax, kWeightMax);
  // Each block in lane order.
  std::vector<int64_t> order(kBlock);
  for (int64_t p = 0; p < kBlock; ++p) order[size_t(p)] = element_of_slot(p);
  codes = codes.index_select(2, torch::tensor(order, torch::kInt64));
  return {out, in, codes.to(torch::kInt16).reshape({out, in}).contiguous(), scales.contiguous()};
}

torch::Tensor q16_dequantize(const Q16Weight& weight) {
  const int64_t blocks = weight.in_features / kBlock;
  std::vector<int64_t> slot_of_element(kBlock);
  for (int64_t p = 0; p < kBlock; ++p) slot_of_element[size_t(element_of_slot(p))] = p;
  auto codes = weight.codes.to(torch::kFloat32)
                   .reshape({weight.out_features, blocks, kBlock})
                   .index_select(2, torch::tensor(slot_of_element, torch::kInt64));
  return (codes * weight.scales.unsqueeze(2)).reshape({weight.out_features, weight.in_features});
}

namespace {

// A bf16 weight's 8-bit copy. A bf16 value keeps 8 significant bits and an int8 code times an
// fp32 scale up to 31, so a bf16 weight is never 8-bit blocks to the Q16 copy's rounding; but one
// rounded from 8-bit blocks (a GGUF's Q8_0 layer loaded in bf16) is recovered as it was rounded:
// some scale makes every code times it round to the stored bf16 value. Value i admits the scales
// in [lower_i, upper_i] / code_i: its rounding interval (the midpoints to its bf16 neighbours)
// over its code.
struct Bf16Rounding {
  double value = 0, lower = 0, upper = 0;
  bool even = true;  // a tie rounds to this value when its last bit is 0
};

double bf16_bits_value(uint32_t bits) {
  const uint32_t word = bits << 16;
  float v;
  std::memcpy(&v, &word, sizeof v);
  return double(v);
}

Bf16Rounding bf16_rounding(c10::BFloat16 w) {
  const uint32_t bits = w.x & 0x7fffu;  // the magnitude's
  const double value = bf16_bits_value(bits);
  const double previous = bits ? bf16_bits_value(bits - 1) : 0.0;
  return {value, (value + previous) / 2, (value + bf16_bits_value(bits + 1)) / 2, (bits & 1) == 0};
}

// Whether every value comes back from its code times `scale`, by bf16's rounding (ties to even);
// in double, where an int8 code times an fp32 scale is exact.
bool rounds_back(const Bf16Rounding* r, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) {
    const double code = std::min<double>(kQ8Max, std::nearbyint(r[i].value / scale));
    const double product = code * double(scale);
    if (r[i].value == 0) {
      if (code != 0) return false;
      continue;
    }
    const bool inside = (product > r[i].lower && product < r[i].upper) ||
                        ((product == r[i].lower || product == r[i].upper) && r[i].even);
    if (!inside) return false;
  }
  return true;
}

// The scale of one block of `n` bf16 values, or nullopt where none makes them round back. The
// largest value has code 127 (as Q8_0 rounds it), which bounds the scale to within a bf16 step;
// a value's code is then one of three (its quotient by the middle of the bound, rounded, and the
// two beside it), and the codes whose interval meets the bound narrow it, round by round, until
// no round leaves fewer values with two codes. The middle of the bound is tried first, then the
// ends and middles of the intervals the last round admitted.
std::optional<float> bf16_block_scale(const c10::BFloat16* w, int64_t n) {
  Bf16Rounding r[kQ8Block];
  int64_t top = 0;
  for (int64_t i = 0; i < n; ++i) {
    r[i] = bf16_rounding(w[i]);
    if (r[i].value > r[top].value) top = i;
  }
  if (r[top].value == 0) return 0.0f;
  double a = r[top].lower / kQ8Max, b = r[top].upper / kQ8Max;
  std::vector<double> tries;
  for (int64_t undecided = -1;;) {
    const double middle = (a + b) / 2;
    double next_a = a, next_b = b;
    int64_t now = 0;
    tries.clear();
    for (int64_t i = 0; i < n; ++i) {
      if (r[i].value == 0) continue;
      const double guess = std::nearbyint(r[i].value / middle);
      double from = std::numeric_limits<double>::infinity(), to = -from;
      int count = 0;
      for (double code = guess - 1; code <= guess + 1; ++code) {
        if (code < 1 || code > kQ8Max) continue;
        const double lo = std::max(r[i].lower / code, a), hi = std::min(r[i].upper / code, b);
        // A relative 1e-12 for the division's rounding where the bound is one point (a tie).
        if (lo > hi * (1 + 1e-12)) continue;
        ++count;
        from = std::min(from, lo), to = std::max(to, hi);
        tries.insert(tries.end(), {lo, hi, (lo + hi) / 2});
      }
      if (count == 0) return std::nullopt;  // the bound's codes are these three at most
      next_a = std::max(next_a, from), next_b = std::min(next_b, to);
      now += count > 1;
    }
    a = next_a, b = next_b;
    if (now == undecided) break;
    undecided = now;
  }
  if (rounds_back(r, n, float((a + b) / 2))) return float((a + b) / 2);
  for (double s : tries)
    if (rounds_back(r, n, float(s))) return float(s);
  return std::nullopt;
}

// The 8-bit copy of a bf16 weight [out, in], or nullopt where some block has no scale.
std::optional<Q8Weight> bf16_q8_copy(const torch::Tensor& weight) {
  const auto w = weight.detach().to(torch::kCPU).contiguous();
  const int64_t out = w.size(0), in = w.size(1), blocks = in / kQ8Block;
  auto codes = torch::empty({out, in}, torch::kInt8);
  auto scales = torch::empty({out, blocks}, torch::kFloat32);
  const c10::BFloat16* values = w.data_ptr<c10::BFloat16>();
  int8_t* code = codes.data_ptr<int8_t>();
  float* scale = scales.data_ptr<float>();
  std::atomic<bool> exact{true};
  at::parallel_for(0, out * blocks, 256, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end && exact.load(std::memory_order_relaxed); ++k) {
      const auto s = bf16_block_scale(values + k * kQ8Block, kQ8Block);
      if (!s) {
        exact = false;
        return;
      }
      scale[k] = *s;
      for (int64_t i = 0; i < kQ8Block; ++i) {
        const double v = double(float(values[k * kQ8Block + i]));
        code[k * kQ8Block + i] =
            int8_t(*s == 0 ? 0 : std::clamp<double>(std::nearbyint(v / *s), -kQ8Max, kQ8Max));
      }
    }
  });
  if (!exact) return std::nullopt;
  return Q8Weight{out, in, codes, scales};
}

}  // namespace

std::optional<Q8Weight> q8_exact_quantize(const torch::Tensor& weight) {
  require_whole_blocks(weight, "q8 weight");
  torch::NoGradGuard no_grad;
  if (weight.scalar_type() == torch::kBFloat16) {
    if (!torch::isfinite(weight).all().item<bool>()) return std::nullopt;
    return bf16_q8_copy(weight);
  }
  const int64_t out = weight.size(0), in = weight.size(1), blocks = in / kQ8Block;
  auto w = weight.detach().to(torch::kCPU, torch::kFloat32).reshape({out, blocks, kQ8Block});
  auto absmax = w.abs().amax(2);
  auto scales = absmax / kQ8Max;
  auto codes = torch::round(w / scales.clamp_min(1e-30f).unsqueeze(2)).clamp(-kQ8Max, kQ8Max);
  // Exact where every block comes back within the Q16 copy's own rounding (half of 1/32767 of
  // the block max); a non-finite weight fails the comparison and keeps the Q16 path.
  auto error = (codes * scales.unsqueeze(2) - w).abs().amax(2);
  if (!(error <= absmax * (0.5f / kWeightMax)).all().item<bool>()) return std::nullopt;
  return Q8Weight{out, in, codes.to(torch::kInt8).reshape({out, in}).contiguous(),
                  scales.contiguous()};
}

torch::Tensor q8_dequantize(const Q8Weight& weight) {
  auto codes = weight.codes.to(torch::kFloat32)
                   .reshape({weight.out_features, weight.in_features / kQ8Block, kQ8Block});
  return (codes * weight.scales.unsqueeze(2)).reshape({weight.out_features, weight.in_features});
}

bool cpu_matvec_supports(const torch::Tensor& weight) {
  return weight.device().is_cpu() && whole_blocks_per_row(weight);
}

bool cpu_matvec_supports(const Nf4Weight& weight) {
  return weight.device().is_cpu() && weight.blocksize == kBlock &&
         whole_blocks_per_row(int64_t(weight.shape.size()),
                              weight.shape.size() == 2 ? weight.shape[1] : 0);
}

namespace {

// The weight's block scales for the kernels (weight.cpu_block_scales), made once under a lock,
// since two threads may decode with one model: each block absmax as nf4_dequantize_reference
// recomposes it (multiply, then add), times the inverse level scale (a power of two: exact).
const torch::Tensor& cpu_block_scales(const Nf4Weight& weight) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (weight.cpu_block_scales.defined()) return weight.cpu_block_scales;
  c10::InferenceMode kept_beyond_generation(false);  // a normal tensor, whoever asks next
  const int64_t count = weight.absmax_codes.numel();
  auto scales = torch::empty({count}, torch::kFloat32);
  const uint8_t* codes = weight.absmax_codes.data_ptr<uint8_t>();
  const float* levels = dynamic_map_signed().data();
  const float* group_scale = weight.absmax_scale.data_ptr<float>();
  float* out = scales.data_ptr<float>();
  for (int64_t b = 0; b < count; ++b) {
    float absmax = levels[codes[b]] * group_scale[b / weight.absmax_blocksize];
    absmax = absmax + weight.absmax_offset;
    out[b] = absmax * (1.0f / kLevelScale);
  }
  weight.cpu_block_scales = scales;
  return weight.cpu_block_scales;
}

}  // namespace

torch::Tensor nf4_matvec_cpu(const torch::Tensor& x, const Nf4Weight& weight) {
  if (!cpu_matvec_supports(weight))
    throw Error("nf4 matvec: the weight is not a CPU [out, in] with in a multiple of 64");
  const int64_t out = weight.shape[0], in = weight.shape[1];
  check_input(x, in, "nf4 matvec");
  return run_rows<uint8_t>(
             x, in,
             {{out, weight.packed.data_ptr<uint8_t>(), cpu_block_scales(weight).data_ptr<float>()}},
             in / 2, in / kBlock, nf4_kernel, nf4_activation_order)
      .front();
}

std::vector<torch::Tensor> nf4_matvec_cpu(const torch::Tensor& x,
                                          const std::vector<const Nf4Weight*>& weights) {
  if (weights.empty()) return {};
  const int64_t in = weights.front()->shape.size() == 2 ? weights.front()->shape[1] : 0;
  std::vector<WeightRows<uint8_t>> rows;
  for (const Nf4Weight* weight : weights) {
    if (!cpu_matvec_supports(*weight) || weight->shape[1] != in)
      throw Error("nf4 matvec: the weights are not CPU [out, in] of one in, a multiple of 64");
    rows.push_back({weight->shape[0], weight->packed.data_ptr<uint8_t>(),
                    cpu_block_scales(*weight).data_ptr<float>()});
  }
  check_input(x, in, "nf4 matvec");
  return run_rows<uint8_t>(x, in, rows, in / 2, in / kBlock, nf4_kernel, nf4_activation_order);
}

torch::Tensor q16_matvec_cpu(const torch::Tensor& x, const Q16Weight& weight) {
  const int64_t out = weight.out_features, in = weight.in_features;
  check_input(x, in, "q16 matvec");
  // The Q16 copy stores its block scales row by row already.
  return run_rows<int16_t>(
             x, in, {{out, weight.codes.data_ptr<int16_t>(), weight.scales.data_ptr<float>()}}, in,
             in / kBlock, q16_kernel, [](CpuIsa) { return ActivationOrder::lanes; })
      .front();
}

torch::Tensor q8_matvec_cpu(const torch::Tensor& x, const Q8Weight& weight) {
  const int64_t out = weight.out_features, in = weight.in_features;
  check_input(x, in, "q8 matvec");
  return run_rows<int8_t>(
             x, in, {{out, weight.codes.data_ptr<int8_t>(), weight.scales.data_ptr<float>()}}, in,
             in / kQ8Block, q8_kernel, [](CpuIsa) { return ActivationOrder::natural; })
      .front();
}

}  // namespace citeforge::models
