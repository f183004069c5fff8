// Batched autoregressive decoding with a KV cache: prompts of different lengths are left-padded,
// masked and given their own positions, so a batch decodes like each prompt alone: the same
// tokens, log-probabilities equal up to the rounding of other matmul shapes (tests allow 1e-4).
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
  // The leading tokens all prompts share (a chat header and an instruction, about a third of the
  // demo's prompts) go through the model once, their keys and values copied to every row, and
  // the rest of each prompt is prefilled on top; on a CPU the prompts' rests are packed into one
  // sequence (one matmul a layer over all of them, the attention prompt by prompt), so no
  // padding is computed either. There the prefill's matmuls run at the machine's limit, so the
  // work saved is the time saved. It changes the last bits of every prefill (other row counts
  // and key lengths in the matmuls and the softmax), so of answers near a tie. Off here; a run's
  // config turns it on by default (trainer::PpoSection and EvalSection own that default).
  // Ignored where can_share_prompt_prefix says no.
  bool share_prompt_prefix = false;
};

// Whether `rows` prompts of this model can share a prefilled prefix: not a single prompt, and
// not a sliding-window model (its window counts slots, which no longer differ from positions by
// a constant).
bool can_share_prompt_prefix(const ModelConfig& config, int64_t rows);

// Whether the tokens after a shared prefix are packed into one sequence on this device (a CPU,
// where padding costs its whole share of every matmul) or prefilled as a padded batch (a GPU,
// where it costs little).
bool packs_prompt_rows(const torch::Device& device);

// The number of leading tokens that every prompt has in common, at most one less than the
// shortest (so that each prompt keeps a token of its own, whose logits start its answer).
int64_t shared_prompt_prefix(const std::vector<std::vector<int64_t>>& prompts);

// The final hidden states of each sequence at positions from[b], from[b] + 1, ... (`count` a
// row: [B, count, hidden], zeros past a sequence's end), computed as a CPU prefill with a shared
// prompt prefix computes them: the `shared` leading tokens all sequences have go through the
// model once and the rest of each is packed into one sequence, no padding computed. The states
// of one padded batch up to rounding. PPO's learner scores its rollouts so
// (trainer/ppo/ppo_learner.h). Needs shared <= from[b] < length for every row, and no autograd
// (it fills a cache); throws Error otherwise.
torch::Tensor packed_hidden_states(LlamaForCausalLM& model,
                                   const std::vector<std::vector<int64_t>>& sequences,
                                   int64_t shared, const std::vector<int64_t>& from, int64_t count);

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

// The same for prompts whose first `shared` tokens are already in the cache (slots [0, shared),
// positions 0..shared-1): `lengths[i]` further tokens right-aligned in `width` slots after them.
// Positions are those of the whole prompt; the key mask covers the shared slots too.
AttentionInputs after_shared_prefix_inputs(const std::vector<int64_t>& lengths, int64_t shared,
                                           int64_t width, const torch::Device& device);

}  // namespace citeforge::models
