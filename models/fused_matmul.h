// The one place that decides whether a frozen weight is applied by a fused kernel (reading its
// quantised codes directly) or by dequantise-then-matmul. Linear layers ask it for their NF4
// base, the causal LM for its output layer; their callers (generation, rollouts, evaluation,
// fix-citations) never choose. Today the fused paths are the CPU kernels of cpu_matvec.h, for
// the few rows a decoding step has; a fused GPU path joins here.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "models/cpu_matvec.h"
#include "models/nf4.h"
#include "models/weight_stamp.h"

namespace citeforge::models {

// Up to this many rows (batch x new tokens) a layer call takes the CPU kernels, by the
// activations' dtype: where they beat the dense matmul on the machines measured
// (experiments/bench/results/decode_cpu.md). In fp32 they do up to the 32 rows of a batched
// evaluation; a bf16 matmul (AVX-512 BF16) catches up with them by 16 rows. A prompt's prefill
// and training keep the dense path. 0 for a dtype the kernels do not take.
int64_t fused_max_rows(torch::Dtype dtype);

// On by default; benchmarks and the identity tests switch it off to compare with the dense path.
bool fused_decoding_enabled();
void set_fused_decoding(bool enabled);

// Whether a layer call of `rows` rows (batch x new tokens) of `dtype` activations on `device`
// goes to a fused kernel: fused decoding on, on the CPU, at most fused_max_rows of its dtype.
// Benchmarks ask it to count the bytes of weight a decoding step reads.
bool fused_kernel_applies(int64_t rows, torch::Dtype dtype, torch::Device device = torch::kCPU);

// Whether `x` (the activations of one layer call) goes to a fused kernel: fused_kernel_applies
// to its rows, dtype and device, and no gradient needed through it.
bool use_fused_kernel(const torch::Tensor& x);

// x W^T by the fused NF4 kernel, or nullopt where it does not apply (see use_fused_kernel and
// cpu_matvec_supports).
std::optional<torch::Tensor> fused_nf4_linear(const torch::Tensor& x, const Nf4Weight& weight);
// x W_i^T for several weights of x's inputs in one kernel call (each the bits fused_nf4_linear
// gives it), or nullopt where the fused kernel does not take x or one of the weights.
std::optional<std::vector<torch::Tensor>> fused_nf4_linears(
    const torch::Tensor& x, const std::vector<const Nf4Weight*>& weights);

// A dense output layer's decoding copy, kept while its weight is unchanged: 8-bit where that is
// exact (a GGUF's Q8_0 output layer), 16-bit otherwise.
struct DecodingHead {
  std::optional<Q8Weight> q8;
  Q16Weight q16;  // empty where q8 is set
  WeightStamp stamp;

  int64_t bytes() const { return q8 ? q8->bytes() : q16.bytes(); }
};
// x W^T through `head`'s copy of `weight` (made or refreshed here), or nullopt where the fused
// path does not apply (see use_fused_kernel and cpu_matvec_supports).
std::optional<torch::Tensor> fused_output_layer(const torch::Tensor& x, const torch::Tensor& weight,
                                                DecodingHead& head);

}  // namespace citeforge::models
