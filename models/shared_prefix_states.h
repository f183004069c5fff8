// A training pass over rows that begin with the same tokens (SFT's prompts share their chat
// header and instruction, about a third of the demo's tokens): the shared start runs once.
#pragma once

#include <torch/torch.h>

#include "models/llama.h"

namespace citeforge::models {

// The final hidden states at positions shared .. T-1 ([B, T - shared, hidden]) of a batch `ids`
// [B, T] whose rows all begin with the same `shared` tokens, laid out as
// LlamaForCausalLMImpl::hidden_states(ids) reads them (positions from 0, right padding, no key
// mask). The shared tokens go through the model once, as one row; each layer's keys and values
// of them are expanded to the batch in front of the rows' own (a cache that grows, so autograd
// sums their gradients over the rows). The padded pass's states and gradients up to rounding:
// the linear layers compute the shared tokens once instead of B times. With adapter dropout in
// training, the shared tokens draw one mask for all rows where the padded pass draws one a row.
// Throws Error when 1 <= shared < T does not hold, the rows' first `shared` tokens differ, the
// model has a sliding window (its window counts slots of the padded layout), or it recomputes
// blocks for gradient checkpointing (which runs each block alone, without keys from before).
torch::Tensor hidden_states_after_shared_prefix(LlamaForCausalLM& model, const torch::Tensor& ids,
                                                int64_t shared);

}  // namespace citeforge::models
