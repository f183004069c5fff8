// Rotary position embeddings as transformers computes them (modeling_rope_utils and each
// model's rotary embedding): the inverse frequencies of the config's RoPE type (default, linear,
// dynamic NTK, llama3, yarn; models/hf_config.h's RopeScaling) and the cos/sin tables the
// attention rotates queries and keys by.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "models/hf_config.h"

namespace citeforge::models {

// The inverse frequencies [head_dim / 2] (fp32) and the factor cos and sin are multiplied by
// (1 but for yarn), for a forward pass whose positions reach `max_position`: only "dynamic"
// depends on it, growing theta once the sequence passes the original context (transformers
// recomputes it from the largest position of each forward pass in the same way).
std::pair<torch::Tensor, double> rope_frequencies(const ModelConfig& config, int64_t max_position,
                                                  const torch::Device& device);

// Llama 3's RoPE scaling from the per-frequency factors llama.cpp's converter stores as a GGUF's
// `rope_freqs.weight` (each default inverse frequency is divided by its factor; the metadata keeps
// none of the scaling's parameters). The factor is the largest one; the frequencies between the
// scaled and the unscaled ones give the original context and the high-frequency factor (the low
// one taken as 1, which gives the same frequencies as any other choice would); with too few of
// them to tell, the converter's defaults (context 8192, factors 1 and 4). The result is checked
// by recomputing every factor through this file's own llama3 code: factors it does not
// reproduce within 1e-4 are an Error naming `where`. All factors 1 give no scaling.
RopeScaling llama3_scaling_from_factors(const ModelConfig& config, const torch::Tensor& factors,
                                        const std::string& where);

// cos/sin tables [B, 1, T, head_dim] in fp32 for `positions` [B, T] (int64), in HF's
// rotate-half layout (each frequency twice, in two halves).
std::pair<torch::Tensor, torch::Tensor> rope_tables(const torch::Tensor& positions,
                                                    const ModelConfig& config);

// The tables of every position below `rows`, [rows, head_dim] fp32 on the CPU, kept by a model
// so that a decoding step copies its rows instead of running a dozen operators to make them
// (bench_decode --part kernels times both). One cache serves one model, whose config does not
// change.
struct RopeTableCache {
  torch::Tensor cos, sin;
  int64_t rows = 0;
};

// rope_tables, through `cache` where it applies: a small call on the CPU (at most 4096 positions,
// all in [0, 65536)) of a RoPE type whose tables do not depend on the sequence's length (all but
// "dynamic"). The cache is built by rope_tables itself over positions [0, rows), rows a power of
// two grown as positions need, and each table entry is a function of its position alone, so the
// copied rows have the bits rope_tables gives. Any other call is rope_tables'.
std::pair<torch::Tensor, torch::Tensor> rope_tables(const torch::Tensor& positions,
                                                    const ModelConfig& config,
                                                    RopeTableCache& cache);

// Queries or keys x [B, H, T, head_dim] rotated by the tables: x cos + rotate_half(x) sin in
// fp32, in x's dtype. A small call that needs no gradient on a CPU (a decoding step's: 20 of them
// per step on SmolLM2) runs as one loop instead of ten operators, with the same roundings in the
// same order, so the same bits.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos,
                         const torch::Tensor& sin);

// apply_rope(x, cos, sin) written into `out` (x's shape, any strides: a KV cache's slots; not
// overlapping x), the same bits. Where the loop applies it writes there directly, saving a small
// tensor and a copy (the keys' of each layer at a decoding step); elsewhere it copies
// apply_rope's result in.
void apply_rope_into(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                     torch::Tensor out);

}  // namespace citeforge::models
