// The small Llama the learning tests train: 2 layers of width 32, grouped-query attention
// (4 query heads sharing 2 key/value heads), 64 positions. Shared so that the SFT and PPO
// learning tests exercise the same shape.
#pragma once

#include "models/llama.h"

namespace citeforge::testing {

models::ModelConfig tiny_llama_config(int64_t vocab_size);

// That Llama (vocabulary 64, random weights of std 0.1) with LoRA r 4 on every projection, its
// adapters random (B is zero when attached, which would leave A without a gradient) and no
// dropout, in training mode: two passes that should compute the same function do.
models::LlamaForCausalLM adapted_tiny_llama();

}  // namespace citeforge::testing
