// The small Llama the learning tests train: 2 layers of width 32, grouped-query attention
// (4 query heads sharing 2 key/value heads), 64 positions. Shared so that the SFT and PPO
// learning tests exercise the same shape.
#pragma once

#include "models/llama.h"

namespace citeforge::testing {

models::ModelConfig tiny_llama_config(int64_t vocab_size);

}  // namespace citeforge::testing
