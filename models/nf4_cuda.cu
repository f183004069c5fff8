// Fused NF4 dequantisation on the GPU: one thread per packed byte decodes both 4-bit codes and
// the double-quantised absmax of their block in one pass, instead of the half-dozen tensor ops
// (and temporaries) of the reference path. The per-byte arithmetic is models/nf4_decode.h,
// which tests/models/test_nf4.cpp checks on the CPU; the kernel as a whole is checked against
// nf4_dequantize_reference by the same file on a CUDA machine.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/error.h"
#include "models/nf4.h"
#include "models/nf4_decode.h"

namespace citeforge::models {
namespace {

// Both lookup tables travel as one kernel argument (1 KiB, well under the parameter limit),
// so there is no per-device constant memory to manage.
struct Tables {
  float nf4[16];
  float absmax_levels[256];
};

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __half from_float<__half>(float v) {
  return __float2half(v);
}

template <typename T>
__global__ void dequantize_nf4_kernel(const uint8_t* __restrict__ packed,
                                      const uint8_t* __restrict__ absmax_codes,
                                      const float* __restrict__ absmax_scale, float absmax_offset,
                                      int64_t numel, int64_t blocksize, int64_t absmax_blocksize,
                                      Tables tables, T* __restrict__ out) {
  __shared__ float nf4[16];
  __shared__ float levels[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) levels[i] = tables.absmax_levels[i];
  if (threadIdx.x < 16) nf4[threadIdx.x] = tables.nf4[threadIdx.x];
  __syncthreads();
  const int64_t byte = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (2 * byte >= numel) return;
  const Nf4BytePair pair = nf4_decode_byte(byte, packed, absmax_codes, absmax_scale, absmax_offset,
                                           numel, blocksize, absmax_blocksize, nf4, levels);
  out[2 * byte] = from_float<T>(pair.first);
  if (pair.second_valid) out[2 * byte + 1] = from_float<T>(pair.second);
}

template <typename T>
void launch(const Nf4Weight& w, const Tables& tables, torch::Tensor& out) {
  const int threads = 256;
  const int64_t bytes = (w.numel + 1) / 2;
  const int64_t blocks = (bytes + threads - 1) / threads;
  auto stream = at::cuda::getCurrentCUDAStream();
  dequantize_nf4_kernel<T><<<blocks, threads, 0, stream>>>(
      w.packed.data_ptr<uint8_t>(), w.absmax_codes.data_ptr<uint8_t>(),
      w.absmax_scale.data_ptr<float>(), w.absmax_offset, w.numel, w.blocksize, w.absmax_blocksize,
      tables, reinterpret_cast<T*>(out.data_ptr()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

torch::Tensor nf4_dequantize(const Nf4Weight& w, torch::Dtype dtype) {
  if (!w.packed.is_cuda()) return nf4_dequantize_reference(w, dtype);
  if (w.blocksize % 2) throw Error("nf4: the CUDA kernel needs an even blocksize");
  c10::cuda::CUDAGuard guard(w.packed.device());
  Tables tables;
  std::copy(nf4_codebook().begin(), nf4_codebook().end(), tables.nf4);
  std::copy(dynamic_map_signed().begin(), dynamic_map_signed().end(), tables.absmax_levels);
  auto out = torch::empty(w.shape, w.packed.options().dtype(dtype));
  switch (dtype) {
    case torch::kFloat32:
      launch<float>(w, tables, out);
      break;
    case torch::kBFloat16:
      launch<__nv_bfloat16>(w, tables, out);
      break;
    case torch::kFloat16:
      launch<__half>(w, tables, out);
      break;
    default:
      return nf4_dequantize_reference(w, dtype);
  }
  return out;
}

}  // namespace citeforge::models
