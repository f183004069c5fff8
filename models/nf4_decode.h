// The per-byte arithmetic of the fused NF4 dequantisation kernel (models/nf4_cuda.cu), written
// once for host and device. The kernel calls it for the byte its thread owns; the CPU test
// calls it for every byte and compares with nf4_dequantize_reference, so the indexing and the
// absmax recomposition the kernel runs are checked on machines without a GPU too. What only a
// GPU can check is the launch itself (grid, shared-memory tables, dtype stores).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CITEFORGE_HOST_DEVICE __host__ __device__
#else
#define CITEFORGE_HOST_DEVICE
#endif

namespace citeforge::models {

// Values 2 * byte and 2 * byte + 1 of the weight (the second only when `*second_valid`).
// `nf4` holds the 16 NF4 levels, `levels` the 256 values of the signed dynamic map.
struct Nf4BytePair {
  float first = 0, second = 0;
  bool second_valid = false;
};

CITEFORGE_HOST_DEVICE inline Nf4BytePair nf4_decode_byte(
    int64_t byte, const uint8_t* packed, const uint8_t* absmax_codes, const float* absmax_scale,
    float absmax_offset, int64_t numel, int64_t blocksize, int64_t absmax_blocksize,
    const float* nf4, const float* levels) {
  const int64_t first = 2 * byte;
  const uint8_t q = packed[byte];
  // blocksize is even, so both values of a byte share one absmax block.
  const int64_t block = first / blocksize;
  // Multiply, round, then add, as the reference's two tensor ops do: nvcc would otherwise
  // contract a * b + c into one FMA and round once, and the results would differ in the last bit.
#if defined(__CUDA_ARCH__)
  const float absmax =
      __fadd_rn(__fmul_rn(levels[absmax_codes[block]], absmax_scale[block / absmax_blocksize]),
                absmax_offset);
#else
  const float absmax =
      levels[absmax_codes[block]] * absmax_scale[block / absmax_blocksize] + absmax_offset;
#endif
  Nf4BytePair pair;
  pair.first = nf4[q >> 4] * absmax;
  pair.second_valid = first + 1 < numel;
  if (pair.second_valid) pair.second = nf4[q & 15] * absmax;
  return pair;
}

}  // namespace citeforge::models
