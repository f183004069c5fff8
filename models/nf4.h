// NF4 4-bit weights as bitsandbytes stores them (QLoRA): the weight is split into blocks of 64
// values in row-major order, each block is scaled by its absolute maximum and every value is
// rounded to the nearest of 16 NormalFloat levels. The per-block absmax is itself quantised
// ("double quantisation"): the mean is subtracted and the rest is stored as 8-bit codes of
// bitsandbytes' dynamic map in blocks of 256, each with an fp32 scale. That gives about
// 4 + 8/64 + 32/(64*256) = 4.127 bits per parameter.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <vector>

namespace citeforge::models {

struct Nf4Weight {
  std::vector<int64_t> shape;  // of the original tensor, e.g. [out, in]
  int64_t numel = 0;
  int64_t blocksize = 64;          // values per absmax block (the last block may be ragged)
  int64_t absmax_blocksize = 256;  // absmax values per second-level block (last may be ragged)
  torch::Tensor packed;            // uint8 [ceil(numel / 2)]: element 2i in the high nibble
  torch::Tensor absmax_codes;      // uint8 [ceil(numel / blocksize)]: dynamic-map codes
  torch::Tensor absmax_scale;      // float32 [ceil(n_blocks / absmax_blocksize)]
  float absmax_offset = 0;         // mean of the first-level absmax, added back on dequantise
  // float32 [n_blocks], made by the CPU decoding kernels on first use (models/cpu_matvec.cpp):
  // each block's absmax recomposed as the reference does, in units of one int16 level. Making
  // them at every call cost about a fifth of a batch-1 layer; holding them costs 4 bytes a block
  // (6% of the weight's NF4 bytes). Not part of bytes(); empty off the CPU.
  mutable torch::Tensor cpu_block_scales;

  // Bytes held by the tensors above (the storage cost of the quantised weight).
  int64_t bytes() const;
  torch::Device device() const { return packed.device(); }
};

// bitsandbytes' NF4 levels (quantiles of N(0, 1) normalised to [-1, 1], exact zero included).
const std::array<float, 16>& nf4_codebook();
// bitsandbytes' 8-bit signed dynamic map (create_dynamic_map(signed=True)), 256 ascending values.
const std::array<float, 256>& dynamic_map_signed();

// Quantises a floating tensor of any shape (on its own device). Throws Error on empty input.
Nf4Weight nf4_quantize(const torch::Tensor& weight, int64_t blocksize = 64);

// The dense tensor back in `dtype`, on the weight's device. On CUDA builds a CUDA weight goes
// through the fused kernel (models/nf4_cuda.cu); otherwise through torch ops.
torch::Tensor nf4_dequantize(const Nf4Weight& weight, torch::Dtype dtype = torch::kFloat32);

// Only the torch-ops path (the CPU reference the CUDA kernel is checked against).
torch::Tensor nf4_dequantize_reference(const Nf4Weight& weight,
                                       torch::Dtype dtype = torch::kFloat32);

// A copy of the weight with its tensors moved to `device`.
Nf4Weight nf4_to(const Nf4Weight& weight, const torch::Device& device);

}  // namespace citeforge::models
