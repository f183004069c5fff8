// Attention of a decoding step on a CPU: one new query per row against the rows' cached keys
// and values, in one pass per kv head over its group of query heads. A bf16 model's exact path
// (two batched bf16 matmuls around the fp32 softmax) took 47 µs a SmolLM2 layer at batch 1 for
// a few µs of arithmetic (experiments/bench/results/decode_cpu.md; docs/design.md §4, "Decoding
// on a CPU"). An fp32 model's, ATen's fused kernel, turns a one-row query into a matrix-vector
// call per head, whose setup and parallel region cost more than the arithmetic; this kernel
// replaced it at decoding steps once its softmax and weighted sum were vectorised
// (bench_decode's attention table, experiments/bench/results/decode_cpu_avx2.md).
//
// It computes what the exact attention of a reduced-precision model computes (models/llama.cpp):
// each score the query-key dot product accumulated in fp32 (rounded to the model's dtype, as a
// bf16 matmul's output is), scaled by 1/sqrt(head dim), the fp32 bias added, the softmax in
// fp32, the probabilities rounded to the model's dtype, their weighted sum of the values
// accumulated in fp32. Sums run in 16 fixed lanes folded in a fixed order, and no multiply-add
// is fused (the file is compiled with -ffp-contract=off), so every instruction-set path gives
// the same bits.
#pragma once

#include <torch/torch.h>

namespace citeforge::models {

// Whether a layer call's attention goes to decode_attention_cpu: on the CPU, one new token per
// row, fp32 or bf16, no gradient needed through it, the attention weights not read, and fused
// decoding on (models/fused_matmul.h's switch, which the identity tests turn off).
bool decode_attention_applies(const torch::Tensor& q, const torch::Tensor& k, int64_t new_tokens,
                              bool reads_attention);

// q [B, H, 1, D], k and v [B, H / groups, S, D] (the cache's slots so far; each row of D
// contiguous), bias [B, 1, 1, S] added to the scores (0 allowed, the dtype's lowest not; any
// float dtype, read in fp32) or undefined for none. Query head h reads kv head h / groups.
// Returns [B, H, 1, D] in q's dtype.
torch::Tensor decode_attention_cpu(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const torch::Tensor& bias,
                                   int64_t groups);

}  // namespace citeforge::models
