// Batched autoregressive decoding with a KV cache: prompts of different lengths are left-padded,
// masked and given their own positions, so a batch decodes exactly like each prompt alone.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/llama.h"

namespace citeforge::models {

struct SamplingOptions {
  int64_t max_new_tokens = 64;
  bool greedy = true;
  double temperature = 1.0;
  double top_p = 1.0;
  uint64_t seed = 0;      // row i samples from its own generator seeded (seed, first_row + i)
  int64_t first_row = 0;  // a shard of a larger batch passes its offset, and samples as in it
  std::vector<int64_t> eos_ids;           // empty: the model config's
  std::vector<std::string> stop_strings;  // need `decode`
  // Finished answers leave the batch once a quarter of it is done, so the rest decode on fewer
  // rows. A bf16 matmul over fewer rows can round differently, so a caller whose log-probs must
  // equal a later full-batch pass's to the bit (PPO's sampler) keeps the batch whole.
  bool drop_finished_rows = true;
};

struct Generation {
  std::vector<int64_t> tokens;  // generated ids, EOS included when it ended the answer
  std::vector<float> logprobs;  // log softmax(logits / temperature) of each token (before top-p)
  std::string text;             // decoded tokens cut before a stop string (when `decode` given)
  std::string finish_reason;    // "eos", "stop" or "length"
};

using TokenDecoder = std::function<std::string(const std::vector<int64_t>&)>;

std::vector<Generation> generate(LlamaForCausalLM& model,
                                 const std::vector<std::vector<int64_t>>& prompts,
                                 const SamplingOptions& options, const TokenDecoder& decode = {});

// Positions and key mask for a left-padded batch: `lengths[i]` real tokens right-aligned in
// `width` slots. Positions of padding slots are 0.
AttentionInputs left_padded_inputs(const std::vector<int64_t>& lengths, int64_t width,
                                   const torch::Device& device);

}  // namespace citeforge::models
