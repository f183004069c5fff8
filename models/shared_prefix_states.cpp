#include "models/shared_prefix_states.h"

#include <string>

#include "common/error.h"
#include "models/kv_cache.h"

namespace citeforge::models {

torch::Tensor hidden_states_after_shared_prefix(LlamaForCausalLM& model, const torch::Tensor& ids,
                                                int64_t shared) {
  const auto fail = [&](const std::string& why) {
    throw Error("hidden_states_after_shared_prefix: " + why);
  };
  if (ids.dim() != 2) fail("token ids must be [rows, tokens]");
  const int64_t B = ids.size(0), T = ids.size(1);
  if (shared < 1 || shared >= T)
    fail(std::to_string(shared) + " shared tokens of " + std::to_string(T) +
         ": each row needs at least one after them");
  if (model->config.sliding_window) fail("a sliding-window model attends by padded slot");
  if (model->gradient_checkpointing && torch::GradMode::is_enabled())
    fail("gradient checkpointing recomputes each block alone, without the shared keys");
  const auto start = ids.narrow(1, 0, shared);
  if (!start.eq(start.narrow(0, 0, 1)).all().item<bool>())
    fail("the rows do not all begin with the same " + std::to_string(shared) + " tokens");
  const auto positions = torch::TensorOptions().dtype(torch::kInt64).device(ids.device());
  KVCache cache = growing_kv_cache(model->config);
  AttentionInputs prefix;
  prefix.positions = torch::arange(shared, positions).unsqueeze(0);
  model->hidden_states(start.narrow(0, 0, 1), prefix, &cache);
  AttentionInputs rest;
  rest.positions = torch::arange(shared, T, positions).unsqueeze(0).expand({B, T - shared});
  return model->hidden_states(ids.narrow(1, shared, T - shared), rest, &cache);
}

}  // namespace citeforge::models
