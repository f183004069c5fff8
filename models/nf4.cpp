#include "models/nf4.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace citeforge::models {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The flat values padded with zeros to a whole number of blocks, as [blocks, blocksize].
torch::Tensor as_blocks(const torch::Tensor& flat, int64_t blocksize) {
  const int64_t n = flat.numel();
  const int64_t padded = ceil_div(n, blocksize) * blocksize;
  auto x = padded == n ? flat : torch::constant_pad_nd(flat, {0, padded - n}, 0);
  return x.view({-1, blocksize});
}

// Index of the nearest level of a sorted table: the number of midpoints strictly below x,
// which sends a value exactly on a midpoint to the lower level, as bitsandbytes does.
torch::Tensor nearest_level(const torch::Tensor& x, const torch::Tensor& sorted_levels) {
  const int64_t n = sorted_levels.size(0);
  auto midpoints = (sorted_levels.narrow(0, 0, n - 1) + sorted_levels.narrow(0, 1, n - 1)) * 0.5f;
  return torch::bucketize(x.contiguous(), midpoints.to(x.device()), /*out_int32=*/false,
                          /*right=*/false);
}

// The 4-bit level: bitsandbytes' (pure torch) quantize_4bit scales full blocks by the fp32
// reciprocal of their absmax but divides the ragged last block, and the two differ by an ulp
// often enough to matter at a rounding boundary, so both are reproduced. An all-zero block
// scales to zeros (code of 0.0).
torch::Tensor scale_nf4_blocks(const torch::Tensor& blocks, const torch::Tensor& absmax,
                               int64_t numel) {
  auto scaled = blocks * (1.0f / absmax.clamp_min(1e-38f)).unsqueeze(1);
  const int64_t blocksize = blocks.size(1), tail = numel % blocksize;
  if (tail) {
    auto last = blocks.size(0) - 1;
    auto divided = blocks[last] / absmax[last];
    scaled[last] = torch::where(absmax[last] > 0, divided, torch::zeros_like(divided));
  }
  return scaled.clamp(-1.0f, 1.0f);
}

// The 8-bit level: bitsandbytes' C++ quantize_cpu does not search for the nearest code; it
// maps the scaled value onto a 65536-slot grid over [-1, 1] and reads the code from a table
// built for that grid, which occasionally picks a neighbour of the nearest code. Matching its
// codes bit for bit (tests/fixtures/nf4) means using the same table.
const torch::Tensor& absmax_code_table() {
  static const torch::Tensor table = [] {
    auto grid = torch::arange(65536, torch::kFloat32);
    grid = (grid * 2.0f) / 65535.0f - 1.0f;
    auto levels =
        torch::from_blob(const_cast<float*>(dynamic_map_signed().data()), {256}, torch::kFloat32);
    return nearest_level(grid, levels).to(torch::kUInt8);
  }();
  return table;
}

torch::Tensor absmax_codes_of(const torch::Tensor& blocks) {
  auto absmax = blocks.abs().amax(1);
  auto inverse = torch::where(absmax > 0, 1.0f / absmax, torch::zeros_like(absmax));
  auto normed = (blocks * inverse.unsqueeze(1)).clamp(-1.0f, 1.0f);
  auto slot = ((normed + 1.0f) * 0.5f * 65535.0f + 0.5f).trunc().to(torch::kInt64);
  auto codes = absmax_code_table().to(blocks.device()).index({slot});
  // A block whose absmaxes are all equal has nothing to scale; bitsandbytes writes code 0.
  return torch::where((absmax > 0).unsqueeze(1), codes, torch::zeros_like(codes));
}

torch::Tensor table_tensor(const float* values, int64_t n, const torch::Device& device) {
  return torch::from_blob(const_cast<float*>(values), {n}, torch::kFloat32).to(device);
}

}  // namespace

const std::array<float, 16>& nf4_codebook() {
  // bitsandbytes' NF4 (QLoRA paper, Appendix E), as float32 literals of its source.
  static const std::array<float, 16> levels = {-1.0f,
                                               -0.6961928009986877f,
                                               -0.5250730514526367f,
                                               -0.39491748809814453f,
                                               -0.28444138169288635f,
                                               -0.18477343022823334f,
                                               -0.09105003625154495f,
                                               0.0f,
                                               0.07958029955625534f,
                                               0.16093020141124725f,
                                               0.24611230194568634f,
                                               0.33791524171829224f,
                                               0.44070982933044434f,
                                               0.5626170039176941f,
                                               0.7229568362236023f,
                                               1.0f};
  return levels;
}

const std::array<float, 256>& dynamic_map_signed() {
  // bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for each
  // exponent i in 0..6, the midpoints of linspace(0.1, 1, 2^i + 1) scaled by 10^(i-6), both
  // signs, plus 0 and 1, sorted. Computed with the same float32 torch ops bitsandbytes uses, so
  // the table is bit-identical to its own (the NF4 fixture test checks that).
  static const std::array<float, 256> table = [] {
    std::vector<float> data;
    for (int i = 0; i < 7; ++i) {
      const int64_t items = (int64_t(1) << i) + 1;
      auto boundaries = torch::linspace(0.1, 1.0, items, torch::kFloat32);
      auto means = (boundaries.narrow(0, 0, items - 1) + boundaries.narrow(0, 1, items - 1)) / 2.0;
      const double scale = std::pow(10.0, double(i - 6));
      auto positive = (means * scale).contiguous();
      auto negative = (means * -scale).contiguous();
      for (int64_t k = 0; k < items - 1; ++k) data.push_back(positive[k].item<float>());
      for (int64_t k = 0; k < items - 1; ++k) data.push_back(negative[k].item<float>());
    }
    data.push_back(0.0f);
    data.push_back(1.0f);
    if (data.size() != 256) throw Error("internal: dynamic map has " + std::to_string(data.size()));
    std::sort(data.begin(), data.end());
    std::array<float, 256> out{};
    std::copy(data.begin(), data.end(), out.begin());
    return out;
  }();
  return table;
}

int64_t Nf4Weight::bytes() const {
  return int64_t(packed.nbytes() + absmax_codes.nbytes() + absmax_scale.nbytes()) +
         int64_t(sizeof(absmax_offset));
}

Nf4Weight nf4_quantize(const torch::Tensor& weight, int64_t blocksize) {
  if (!weight.defined() || weight.numel() == 0) throw Error("nf4: cannot quantise an empty tensor");
  if (!weight.is_floating_point()) throw Error("nf4: weight must be a floating-point tensor");
  if (blocksize <= 0 || blocksize % 2) throw Error("nf4: blocksize must be even and positive");
  torch::NoGradGuard no_grad;
  const auto device = weight.device();
  Nf4Weight q;
  q.shape = weight.sizes().vec();
  q.numel = weight.numel();
  q.blocksize = blocksize;

  auto blocks = as_blocks(weight.detach().flatten().to(torch::kFloat32), blocksize);
  auto absmax = blocks.abs().amax(1);
  auto codes = nearest_level(scale_nf4_blocks(blocks, absmax, q.numel),
                             table_tensor(nf4_codebook().data(), 16, device))
                   .to(torch::kUInt8)
                   .flatten()
                   .narrow(0, 0, q.numel);
  // Two codes a byte, element 2i in the high nibble (bitsandbytes' layout); an odd count pads
  // the last byte with the code of 0.0, as bitsandbytes does.
  if (q.numel % 2) codes = torch::cat({codes, torch::full({1}, 7, codes.options())});
  auto pairs = codes.view({-1, 2});
  q.packed = (pairs.select(1, 0).bitwise_left_shift(4) | pairs.select(1, 1)).contiguous();

  // Double quantisation of the absmax: subtract the mean (torch's fp32 mean, as bitsandbytes),
  // then 8-bit dynamic-map codes in blocks of absmax_blocksize with one fp32 scale each.
  q.absmax_offset = absmax.mean().item<float>();
  auto centred = as_blocks(absmax - q.absmax_offset, q.absmax_blocksize);
  q.absmax_codes = absmax_codes_of(centred).flatten().narrow(0, 0, absmax.numel()).contiguous();
  q.absmax_scale = centred.abs().amax(1).contiguous();
  return q;
}

torch::Tensor nf4_dequantize_reference(const Nf4Weight& w, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  const auto device = w.device();
  const int64_t blocks = w.absmax_codes.numel();
  auto absmax_levels = table_tensor(dynamic_map_signed().data(), 256, device);
  auto absmax = absmax_levels.index({w.absmax_codes.to(torch::kInt64)}) *
                    w.absmax_scale.repeat_interleave(w.absmax_blocksize).narrow(0, 0, blocks) +
                w.absmax_offset;
  auto packed = w.packed.to(torch::kInt64);
  auto codes = torch::stack({packed.bitwise_right_shift(4), packed.bitwise_and(15)}, 1)
                   .flatten()
                   .narrow(0, 0, w.numel);
  auto values = table_tensor(nf4_codebook().data(), 16, device).index({codes}) *
                absmax.repeat_interleave(w.blocksize).narrow(0, 0, w.numel);
  return values.view(w.shape).to(dtype);
}

#ifndef CITEFORGE_WITH_CUDA
torch::Tensor nf4_dequantize(const Nf4Weight& weight, torch::Dtype dtype) {
  return nf4_dequantize_reference(weight, dtype);
}
#endif

Nf4Weight nf4_to(const Nf4Weight& weight, const torch::Device& device) {
  Nf4Weight out = weight;
  out.packed = weight.packed.to(device);
  out.absmax_codes = weight.absmax_codes.to(device);
  out.absmax_scale = weight.absmax_scale.to(device);
  out.cpu_block_scales = torch::Tensor();  // remade on first use where it is needed
  return out;
}

}  // namespace citeforge::models
