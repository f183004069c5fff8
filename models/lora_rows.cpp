#include "models/lora_rows.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "models/cpu_matvec.h"
#include "models/fused_matmul.h"

#define CITEFORGE_INLINE inline __attribute__((always_inline))

namespace citeforge::models {
namespace {

// The dot product of two fp32 rows of n, in 8 interleaved partial sums (which the compiler
// vectorises) added in a fixed order: the same bits at any vector width.
CITEFORGE_INLINE float dot(const float* a, const float* b, int64_t n) {
  float lanes[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += a[i + l] * b[i + l];
  for (int l = 0; i < n; ++i, ++l) lanes[l] += a[i] * b[i];
  return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
         ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}

// t[r, k] = x[r] . A[k] for k in [begin, end): x A^T.
CITEFORGE_INLINE void project(const float* x, int64_t rows, int64_t in, const float* A,
                              int64_t rank, float* t, int64_t begin, int64_t end) {
  for (int64_t k = begin; k < end; ++k)
    for (int64_t r = 0; r < rows; ++r) t[r * rank + k] = dot(x + r * in, A + k * in, in);
}

// y[r, j] += (t[r] . B[j]) * scale for columns j in [begin, end), each row's sum in the same
// order whatever the number of rows.
template <class T>
CITEFORGE_INLINE void expand(const float* t, int64_t rows, int64_t rank, const float* B,
                             int64_t out, float scale, T* y, int64_t begin, int64_t end) {
  for (int64_t j = begin; j < end; ++j)
    for (int64_t r = 0; r < rows; ++r) {
      const float term = dot(t + r * rank, B + j * rank, rank) * scale;
      y[r * out + j] = T(float(y[r * out + j]) + float(T(term)));
    }
}

// Each loop for the CPU's vector width: the same arithmetic in the same order, so the same bits.
void project_portable(const float* x, int64_t rows, int64_t in, const float* A, int64_t rank,
                      float* t, int64_t begin, int64_t end) {
  project(x, rows, in, A, rank, t, begin, end);
}
template <class T>
void expand_portable(const float* t, int64_t rows, int64_t rank, const float* B, int64_t out,
                     float scale, T* y, int64_t begin, int64_t end) {
  expand(t, rows, rank, B, out, scale, y, begin, end);
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) void project_avx2(const float* x, int64_t rows, int64_t in,
                                                  const float* A, int64_t rank, float* t,
                                                  int64_t begin, int64_t end) {
  project(x, rows, in, A, rank, t, begin, end);
}
template <class T>
__attribute__((target("avx2"))) void expand_avx2(const float* t, int64_t rows, int64_t rank,
                                                 const float* B, int64_t out, float scale, T* y,
                                                 int64_t begin, int64_t end) {
  expand(t, rows, rank, B, out, scale, y, begin, end);
}
#endif

template <class T>
void add_term(const float* x, int64_t rows, int64_t in, const float* A, int64_t rank,
              const float* B, int64_t out, float scale, T* y) {
  auto project_range = project_portable;
  auto expand_range = expand_portable<T>;
#if defined(__x86_64__)
  if (active_cpu_isa() == CpuIsa::avx2 || active_cpu_isa() == CpuIsa::avx512)
    project_range = project_avx2, expand_range = expand_avx2<T>;
#endif
  std::vector<float> t(size_t(rank * rows));
  const int64_t work = rows * in;  // multiply-adds per adapter row
  at::parallel_for(0, rank, std::max<int64_t>(1, 16384 / work), [&](int64_t begin, int64_t end) {
    project_range(x, rows, in, A, rank, t.data(), begin, end);
  });
  at::parallel_for(0, out, std::max<int64_t>(16, 16384 / std::max<int64_t>(1, rows * rank)),
                   [&](int64_t begin, int64_t end) {
                     expand_range(t.data(), rows, rank, B, out, scale, y, begin, end);
                   });
}

}  // namespace

bool lora_rows_add_(torch::Tensor& y, const torch::Tensor& x, const torch::Tensor& A,
                    const torch::Tensor& B, double scale) {
  if (torch::GradMode::is_enabled() || x.dim() == 0) return false;
  const int64_t in = x.size(-1), rows = in ? x.numel() / in : 0;
  // The decoding kernels' rule (fp32 adapters): rows enough few, on the CPU, and switched on.
  if (rows == 0 || !fused_kernel_applies(rows, torch::kFloat32, x.device())) return false;
  if (A.scalar_type() != torch::kFloat32 || B.scalar_type() != torch::kFloat32 ||
      !A.is_contiguous() || !B.is_contiguous() || A.dim() != 2 || B.dim() != 2 || A.size(1) != in ||
      B.size(1) != A.size(0) || !A.device().is_cpu() || !B.device().is_cpu())
    return false;
  const int64_t out = B.size(0);
  if (y.numel() != rows * out || !y.device().is_cpu() || !y.is_contiguous() ||
      (y.scalar_type() != torch::kFloat32 && y.scalar_type() != torch::kBFloat16))
    return false;
  const auto xf = x.to(torch::kFloat32).contiguous();
  if (y.scalar_type() == torch::kFloat32)
    add_term(xf.data_ptr<float>(), rows, in, A.data_ptr<float>(), A.size(0), B.data_ptr<float>(),
             out, float(scale), y.data_ptr<float>());
  else
    add_term(xf.data_ptr<float>(), rows, in, A.data_ptr<float>(), A.size(0), B.data_ptr<float>(),
             out, float(scale), y.data_ptr<c10::BFloat16>());
  return true;
}

}  // namespace citeforge::models
