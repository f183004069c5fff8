// A new Llama with random weights, initialised as HF's LlamaPreTrainedModel does (normal
// std 0.02 for projections and embeddings, ones for RMSNorm), for models a run builds itself.
#pragma once

#include <cstdint>

#include "models/llama.h"

namespace citeforge::models {

LlamaForCausalLM init_random_model(const ModelConfig& config, uint64_t seed, double std = 0.02);

}  // namespace citeforge::models
