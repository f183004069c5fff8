// A 4-bit (NF4) or 16-bit (Q16) frozen weight times the few rows a decoding step has, on a CPU,
// reading the packed codes directly instead of a dequantised copy. Batch-1 decoding is bound by
// the bytes of weight it reads: about half a byte a weight here against 4 (fp32) or 2 (bf16)
// for a dense copy (docs/design.md §4, "Decoding on a CPU").
//
// Every instruction-set path gives the same bits (the Q8 copy's below too, in its own order): the
// activations of each 64-value block are rounded to int16 (±8191 times the block's absolute
// maximum), the NF4 levels to int16 (2^14 times the level), the products summed exactly in eight
// 32-bit lanes per block, and only then scaled in fp32 by the weight's block absmax and the
// activations' block scale and added in a fixed order that all paths share. Against the
// dequantise-then-matmul reference this differs by the activations' rounding (at most 2^-14 of a
// block's largest value) and the levels' (at most 2^-15 of the block absmax) and by the order of
// the fp32 sum over blocks, which is fixed and the same on every path.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "models/nf4.h"

namespace citeforge::models {

// The instruction sets the kernels are written for, chosen at run time from what the CPU
// reports. `portable` is plain C++ and runs anywhere; `avx512` needs AVX-512 F and BW.
enum class CpuIsa { portable, sse41, avx2, avx512 };
std::string cpu_isa_name(CpuIsa isa);
// The best path this CPU can run.
CpuIsa detected_cpu_isa();
// The path in use: the detected one unless tests or benchmarks forced another (nullopt undoes
// it). Forcing a path the CPU cannot run throws Error.
CpuIsa active_cpu_isa();
void force_cpu_isa(std::optional<CpuIsa> isa);

// How many threads a parallel loop of these kernels runs on with LibTorch's current intra-op
// thread count: 1 where the build compiled ATen's OpenMP loop without -fopenmp (which silently
// serialises it), the thread count otherwise. The build's check, in a test.
int cpu_kernel_threads();

// A 16-bit copy of a dense weight [out, in] for decoding (the output layer, which stays dense
// for training): symmetric int16 codes per block of 64 inputs (block max / 32767), one fp32
// scale each. Half the bytes of fp32 at a rounding of 2^-16 of the block max, well under the
// activations' own: an 8-bit copy (llama.cpp's Q8_0 output) read half as many bytes again but
// moved SmolLM2's logits by up to 0.3 (of a spread of 50), enough to part PPO's sampler from
// its learner. Inside each block the codes are stored in the order the NF4 kernel unpacks its
// nibbles in (see cpu_matvec.cpp's lane order).
struct Q16Weight {
  int64_t out_features = 0, in_features = 0;
  torch::Tensor codes;   // int16 [out, in]
  torch::Tensor scales;  // float32 [out, in / 64]

  int64_t bytes() const { return int64_t(codes.nbytes() + scales.nbytes()); }
};
// Throws Error where cpu_matvec_supports(weight) does not hold.
Q16Weight q16_quantize(const torch::Tensor& weight);
// The fp32 weight the Q16 copy stands for (codes times scales, in input order).
torch::Tensor q16_dequantize(const Q16Weight& weight);

// An 8-bit copy of a dense weight for decoding, made only where it is exact: every block of 32
// inputs is a multiple of one scale (block max / 127) to within the Q16 copy's own rounding. A
// GGUF's Q8_0 weight dequantised is exactly that (SmolLM2's output layer ships as Q8_0), so its
// copy reads 1.125 bytes a weight instead of 2.06 and computes the same products the Q16 copy
// would, the activations still rounded to int16 (llama.cpp also rounds them to 8 bits, which is
// what moved the logits above). Codes in input order, int8 [out, in]; scales [out, in / 32].
struct Q8Weight {
  int64_t out_features = 0, in_features = 0;
  torch::Tensor codes;   // int8 [out, in]
  torch::Tensor scales;  // float32 [out, in / 32]

  int64_t bytes() const { return int64_t(codes.nbytes() + scales.nbytes()); }
};
// The exact 8-bit copy, or nullopt where some block is not exact in 8 bits (a trained weight):
// those keep the Q16 copy. A bf16 weight is exact in its own precision: every code times its
// block's scale rounds to the stored bf16 value (as a Q8_0 layer loaded in bf16 does), so the
// kernel multiplies by the value the bf16 weight was rounded from, within half a bf16 unit in
// the last place of it (2^-8 of the value at most); on SmolLM2 its logits stray from the bf16
// weights' exact product by about as much as the dense bf16 matmul's
// (tests/models/test_smollm2.cpp). Throws Error where cpu_matvec_supports(weight) does not hold.
std::optional<Q8Weight> q8_exact_quantize(const torch::Tensor& weight);
torch::Tensor q8_dequantize(const Q8Weight& weight);

// Whether the kernels take this weight: on the CPU, 2-D, rows a multiple of the 64-value block
// (so no block straddles two rows), blocks of 64.
bool cpu_matvec_supports(const Nf4Weight& weight);
// The same for a dense weight that a Q16 copy is to be made of.
bool cpu_matvec_supports(const torch::Tensor& weight);

// x [..., in] (fp32 or bf16, on the CPU) times the weight's transpose: [..., out] in x's dtype,
// accumulated in fp32. Threads over output rows with LibTorch's intra-op pool.
torch::Tensor nf4_matvec_cpu(const torch::Tensor& x, const Nf4Weight& weight);
// x times each weight (all with x's inputs), as nf4_matvec_cpu gives each to the bit, with x
// rounded to int16 once and all the weights' rows in one parallel loop: a layer's projections of
// one input (q, k and v; gate and up) at a decoding step, whose fork, join and rounding cost as
// much as a small weight's arithmetic.
std::vector<torch::Tensor> nf4_matvec_cpu(const torch::Tensor& x,
                                          const std::vector<const Nf4Weight*>& weights);
torch::Tensor q16_matvec_cpu(const torch::Tensor& x, const Q16Weight& weight);
torch::Tensor q8_matvec_cpu(const torch::Tensor& x, const Q8Weight& weight);

}  // namespace citeforge::models
