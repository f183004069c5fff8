#include "models/generate.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "common/error.h"
#include "models/sampling.h"

namespace citeforge::models {
namespace {

bool contains_any(const std::string& text, const std::vector<std::string>& needles, size_t* where) {
  size_t best = std::string::npos;
  for (const auto& n : needles)
    if (!n.empty()) best = std::min(best, text.find(n));
  *where = best;
  return best != std::string::npos;
}

// Where the prompts sit in the batch's cache: the `shared` leading tokens all of them have in
// slots [0, shared) of every row, then each prompt's own tokens right-aligned in `own_width`
// slots (left-padded).
struct CacheLayout {
  int64_t shared = 0;
  int64_t own_width = 0;
  std::vector<int64_t> own_lengths;
};

// Puts the first `shared` tokens of `prompt` through the model once, as a batch of one, and
// copies their keys and values into slots [0, shared) of every row of `cache`.
void prefill_shared_prefix(LlamaForCausalLM& model, const std::vector<int64_t>& prompt,
                           int64_t shared, KVCache& cache) {
  const auto options = cache.keys.front().options();
  const torch::Device device = options.device();
  KVCache once = make_kv_cache(model->config, 1, shared, options);
  const auto prefix =
      torch::tensor(std::vector<int64_t>(prompt.begin(), prompt.begin() + shared), torch::kInt64);
  model->hidden_states(prefix.unsqueeze(0).to(device),
                       {torch::arange(shared, torch::kInt64).unsqueeze(0).to(device), {}}, &once);
  for (size_t layer = 0; layer < cache.keys.size(); ++layer) {
    cache.keys[layer]
        .narrow(2, 0, shared)
        .copy_(once.keys[layer].expand_as(cache.keys[layer].narrow(2, 0, shared)));
    cache.values[layer]
        .narrow(2, 0, shared)
        .copy_(once.values[layer].expand_as(cache.values[layer].narrow(2, 0, shared)));
  }
  cache.length = shared;
}

// The prompts' own tokens (after the `layout.shared` ones already in `cache`) packed into one
// sequence: each linear layer runs one matmul over all of them, and the padding a batch would
// carry (a quarter of the slots of the demo's PPO prompts after their shared prefix) is not
// computed; the attention runs prompt by prompt (models/llama.h, PackedRows). Returns their
// final hidden states, [sum of own lengths, hidden], prompt after prompt.
torch::Tensor packed_own_states(LlamaForCausalLM& model,
                                const std::vector<std::vector<int64_t>>& prompts,
                                const CacheLayout& layout, const AttentionInputs& inputs,
                                KVCache& cache) {
  const torch::Device device = cache.keys.front().device();
  std::vector<int64_t> ids, positions;
  for (const auto& p : prompts) {
    ids.insert(ids.end(), p.begin() + layout.shared, p.end());
    for (int64_t at = layout.shared; at < int64_t(p.size()); ++at) positions.push_back(at);
  }
  AttentionInputs packed{torch::tensor(positions, torch::kInt64).unsqueeze(0).to(device),
                         inputs.key_mask,
                         {layout.own_lengths, layout.own_width}};
  return model->hidden_states(torch::tensor(ids, torch::kInt64).unsqueeze(0).to(device), packed,
                              &cache)[0];
}

// Fills `cache` with the prompts as `layout` places them and returns the final hidden state of
// each prompt's last token, [B, hidden]: all the prefill's logits need.
torch::Tensor prefill(LlamaForCausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                      const CacheLayout& layout, const AttentionInputs& inputs, bool packed_rows,
                      KVCache& cache) {
  const int64_t B = static_cast<int64_t>(prompts.size());
  const int64_t shared = layout.shared, own_width = layout.own_width;
  const torch::Device device = cache.keys.front().device();
  if (shared > 0) prefill_shared_prefix(model, prompts.front(), shared, cache);
  if (!packed_rows) {
    auto ids = torch::zeros({B, own_width}, torch::kInt64);
    for (int64_t b = 0; b < B; ++b) {
      const auto& p = prompts[size_t(b)];
      ids[b]
          .narrow(0, own_width - layout.own_lengths[size_t(b)], layout.own_lengths[size_t(b)])
          .copy_(torch::tensor(std::vector<int64_t>(p.begin() + shared, p.end()), torch::kInt64));
    }
    return model->hidden_states(ids.to(device), inputs, &cache).select(1, own_width - 1);
  }
  std::vector<int64_t> last_of_row;
  int64_t end = 0;
  for (int64_t length : layout.own_lengths) last_of_row.push_back((end += length) - 1);
  return packed_own_states(model, prompts, layout, inputs, cache)
      .index_select(0, torch::tensor(last_of_row, torch::kInt64).to(device));
}

}  // namespace

AttentionInputs left_padded_inputs(const std::vector<int64_t>& lengths, int64_t width,
                                   const torch::Device& device) {
  const int64_t B = static_cast<int64_t>(lengths.size());
  auto mask = torch::zeros({B, width}, torch::kBool);
  auto positions = torch::zeros({B, width}, torch::kInt64);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t pad = width - lengths[b];
    mask[b].narrow(0, pad, lengths[b]).fill_(true);
    positions[b].narrow(0, pad, lengths[b]).copy_(torch::arange(lengths[b], torch::kInt64));
  }
  return {positions.to(device), mask.to(device)};
}

AttentionInputs after_shared_prefix_inputs(const std::vector<int64_t>& lengths, int64_t shared,
                                           int64_t width, const torch::Device& device) {
  AttentionInputs own = left_padded_inputs(lengths, width, torch::kCPU);
  const int64_t B = static_cast<int64_t>(lengths.size());
  auto positions = own.positions + shared * own.key_mask.to(torch::kInt64);
  auto mask = torch::cat({torch::ones({B, shared}, torch::kBool), own.key_mask}, 1);
  return {positions.to(device), mask.to(device)};
}

bool can_share_prompt_prefix(const ModelConfig& config, int64_t rows) {
  return rows > 1 && !config.sliding_window;
}

bool packs_prompt_rows(const torch::Device& device) {
  return device.is_cpu();
}

torch::Tensor packed_hidden_states(LlamaForCausalLM& model,
                                   const std::vector<std::vector<int64_t>>& sequences,
                                   int64_t shared, const std::vector<int64_t>& from,
                                   int64_t count) {
  const int64_t B = static_cast<int64_t>(sequences.size());
  if (B == 0 || from.size() != sequences.size() || count < 0)
    throw Error("packed_hidden_states: one start position a sequence and count >= 0 needed");
  if (torch::GradMode::is_enabled())
    throw Error(
        "packed_hidden_states: gradients cannot flow through its cache; call it with "
        "them off");
  CacheLayout layout;
  layout.shared = shared;
  std::vector<int64_t> index, real;  // for each [row, i]: its packed token, whether it exists
  int64_t offset = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t length = static_cast<int64_t>(sequences[size_t(b)].size());
    if (shared < 0 || from[size_t(b)] < shared || from[size_t(b)] >= length)
      throw Error("packed_hidden_states: sequence " + std::to_string(b) + " (" +
                  std::to_string(length) + " tokens, states from position " +
                  std::to_string(from[size_t(b)]) +
                  "): the states must start within it and "
                  "at or after the " +
                  std::to_string(shared) + " shared tokens");
    layout.own_lengths.push_back(length - shared);
    layout.own_width = std::max(layout.own_width, length - shared);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t at = from[size_t(b)] + i;
      index.push_back(at < length ? offset + at - shared : offset);
      real.push_back(at < length ? 1 : 0);
    }
    offset += length - shared;
  }
  const auto params = model->parameters();
  const torch::Device device = params.front().device();
  KVCache cache =
      make_kv_cache(model->config, B, shared + layout.own_width, params.front().options());
  if (shared > 0) prefill_shared_prefix(model, sequences.front(), shared, cache);
  const auto inputs =
      after_shared_prefix_inputs(layout.own_lengths, shared, layout.own_width, device);
  const auto states = packed_own_states(model, sequences, layout, inputs, cache);
  const auto exists = torch::tensor(real, torch::kInt64).to(device).to(states.dtype());
  return (states.index_select(0, torch::tensor(index, torch::kInt64).to(device)) *
          exists.unsqueeze(1))
      .reshape({B, count, states.size(-1)});
}

int64_t shared_prompt_prefix(const std::vector<std::vector<int64_t>>& prompts) {
  if (prompts.empty()) return 0;
  int64_t shared = static_cast<int64_t>(prompts.front().size()) - 1;
  for (const auto& p : prompts) {
    shared = std::min<int64_t>(shared, static_cast<int64_t>(p.size()) - 1);
    int64_t same = 0;
    while (same < shared && p[size_t(same)] == prompts.front()[size_t(same)]) ++same;
    shared = same;
  }
  return std::max<int64_t>(shared, 0);
}

std::vector<Generation> generate(LlamaForCausalLM& model,
                                 const std::vector<std::vector<int64_t>>& prompts,
                                 const SamplingOptions& o, const TokenDecoder& decode) {
  if (prompts.empty()) return {};
  if (o.max_new_tokens < 0) throw Error("max_new_tokens must be >= 0");
  if (!o.greedy && (o.temperature <= 0 || o.top_p <= 0 || o.top_p > 1))
    throw Error("sampling needs temperature > 0 and 0 < top_p <= 1");
  if (!o.stop_strings.empty() && !decode) throw Error("stop strings need a decoder");
  // Inference mode, not just no gradients: each of the few thousand small operators of a
  // decoding step then skips autograd's and the version counters' dispatch, a measurable part of
  // a batch-1 step on a CPU. The copies a model keeps beyond the call (a dequantised base, the
  // output layer's decoding or fp32 copy) are made outside inference mode where they are made,
  // so that training can use them after it.
  c10::InferenceMode inference;
  const auto& config = model->config;
  const auto params = model->parameters();
  const torch::Device device = params.front().device();
  const DequantizedWeights dequantize_once(device.is_cpu());
  const std::vector<int64_t> eos = o.eos_ids.empty() ? config.eos_token_ids : o.eos_ids;

  const int64_t B = static_cast<int64_t>(prompts.size());
  std::vector<int64_t> lengths;
  for (const auto& p : prompts) {
    if (p.empty()) throw Error("generate: empty prompt (add a BOS token)");
    lengths.push_back(static_cast<int64_t>(p.size()));
  }
  const int64_t width = *std::max_element(lengths.begin(), lengths.end());
  if (width + o.max_new_tokens > config.context_length())
    throw Error("prompt (" + std::to_string(width) +
                " tokens) plus max_new_tokens exceeds the model's " +
                std::to_string(config.context_length()) + " positions");

  // With a shared prefix the cache holds it once per row in slots [0, shared), then each prompt's
  // own tokens left-padded to `own_width`; without one, shared = 0 and this is the plain
  // left-padded batch.
  const bool share = o.share_prompt_prefix && can_share_prompt_prefix(config, B);
  CacheLayout layout;
  layout.shared = share ? shared_prompt_prefix(prompts) : 0;
  layout.own_width = width - layout.shared;
  for (int64_t length : lengths) layout.own_lengths.push_back(length - layout.shared);
  AttentionInputs inputs =
      layout.shared > 0
          ? after_shared_prefix_inputs(layout.own_lengths, layout.shared, layout.own_width, device)
          : left_padded_inputs(layout.own_lengths, layout.own_width, device);
  torch::Tensor key_mask = inputs.key_mask;
  torch::Tensor next_position = torch::tensor(lengths, torch::kInt64).to(device).unsqueeze(1);
  KVCache cache = make_kv_cache(config, B, width + o.max_new_tokens, params.front().options());
  const torch::Tensor last_hidden =
      prefill(model, prompts, layout, inputs, share && packs_prompt_rows(device), cache);
  std::vector<at::Generator> rngs;
  for (int64_t b = 0; b < B; ++b)
    rngs.push_back(at::detail::createCPUGenerator(o.seed * 1000003ULL +
                                                  static_cast<uint64_t>(o.first_row + b)));

  std::vector<Generation> out(B);
  std::vector<bool> done(B, false);
  // The prompts whose rows the batch still holds, in row order: finished answers are dropped
  // from it (see below), so row i of the logits belongs to prompt active[i].
  std::vector<int64_t> active(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) active[size_t(b)] = b;
  // Logits in fp32 whatever the model's dtype, as the PPO learner computes them, so the
  // sampler's log-probabilities and the learner's agree on a bf16 model too.
  auto logits = model->logits(last_hidden.to(torch::kFloat32));
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    // Everything but the chosen ids and their log-probabilities stays on the model's device:
    // the host needs those for the EOS and stop checks, not the whole vocabulary. Greedy
    // decoding divides by no temperature (dividing by 1 changes no bit).
    auto scores = logits.to(torch::kFloat32);
    if (!o.greedy) scores = scores / o.temperature;
    auto log_probs = torch::log_softmax(scores, -1);
    const int64_t rows = static_cast<int64_t>(active.size());
    torch::Tensor chosen;
    if (o.greedy) {
      chosen = log_probs.argmax(-1);
    } else {
      std::vector<double> uniforms(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i)
        uniforms[size_t(i)] = next_uniform(rngs[size_t(active[size_t(i)])]);
      chosen = draw_by_inverse_cdf(sampling_probs(logits, o.temperature, o.top_p), uniforms);
    }
    const auto chosen_logprobs = log_probs.gather(-1, chosen.unsqueeze(-1)).squeeze(-1).cpu();
    const auto chosen_ids = chosen.cpu();
    auto chosen_acc = chosen_ids.accessor<int64_t, 1>();
    auto chosen_logprobs_acc = chosen_logprobs.accessor<float, 1>();
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t b = active[size_t(i)];
      if (done[b]) continue;
      const int64_t token = chosen_acc[i];
      out[b].tokens.push_back(token);
      out[b].logprobs.push_back(chosen_logprobs_acc[i]);
      if (std::find(eos.begin(), eos.end(), token) != eos.end()) {
        done[b] = true;
        out[b].finish_reason = "eos";
      } else if (!o.stop_strings.empty()) {
        size_t at = 0;
        if (contains_any(decode(out[b].tokens), o.stop_strings, &at)) {
          done[b] = true;
          out[b].finish_reason = "stop";
        }
      }
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; }) ||
        step + 1 == o.max_new_tokens)
      break;
    // Answers end at very different lengths, and a finished row would otherwise be decoded to
    // the end of the longest one. Dropping rows copies the cache, so it waits until a quarter
    // of the batch has finished: a handful of copies per batch.
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < rows; ++i)
      if (!done[active[size_t(i)]]) keep.push_back(i);
    if (o.drop_finished_rows && 4 * (rows - int64_t(keep.size())) >= rows) {
      const auto rows_kept = torch::tensor(keep, torch::kInt64).to(device);
      for (size_t layer = 0; layer < cache.keys.size(); ++layer) {
        cache.keys[layer] = cache.keys[layer].index_select(0, rows_kept);
        cache.values[layer] = cache.values[layer].index_select(0, rows_kept);
      }
      key_mask = key_mask.index_select(0, rows_kept);
      next_position = next_position.index_select(0, rows_kept);
      chosen = chosen.index_select(0, rows_kept);
      std::vector<int64_t> still_active;
      for (int64_t i : keep) still_active.push_back(active[size_t(i)]);
      active = std::move(still_active);
    }
    key_mask =
        torch::cat({key_mask, torch::ones({int64_t(active.size()), 1}, key_mask.options())}, 1);
    AttentionInputs step_inputs{next_position, key_mask};
    logits = model->logits(model->hidden_states(chosen.unsqueeze(1), step_inputs, &cache)
                               .select(1, 0)
                               .to(torch::kFloat32));
    next_position = next_position + 1;
  }
  for (auto& g : out) {
    if (g.finish_reason.empty()) g.finish_reason = "length";
    if (decode) {
      std::vector<int64_t> visible = g.tokens;
      if (g.finish_reason == "eos") visible.pop_back();
      g.text = decode(visible);
      size_t at = 0;
      if (contains_any(g.text, o.stop_strings, &at)) g.text.resize(at);
    }
  }
  return out;
}

}  // namespace citeforge::models
