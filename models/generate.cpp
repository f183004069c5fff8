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

// Fills `cache` with the prompts as `layout` places them and returns the final hidden state of
// each prompt's last token, [B, hidden]: all the prefill's logits need.
torch::Tensor prefill(LlamaForCausalLM& model, const std::vector<std::vector<int64_t>>& prompts,
                      const CacheLayout& layout, const AttentionInputs& inputs, bool packed_rows,
                      KVCache& cache) {
  const int64_t B = static_cast<int64_t>(prompts.size());
  const int64_t shared = layout.shared, own_width = layout.own_width;
  const auto options = cache.keys.front().options();
  const torch::Device device = options.device();
  const auto own_tokens = [&](int64_t b) {
    return torch::tensor(
        std::vector<int64_t>(prompts[size_t(b)].begin() + shared, prompts[size_t(b)].end()),
        torch::kInt64);
  };
  // The shared tokens through the model once, as a batch of one; their keys and values go into
  // every row.
  KVCache once;
  if (shared > 0) {
    once = make_kv_cache(model->config, 1, shared, options);
    const auto prefix = torch::tensor(
        std::vector<int64_t>(prompts.front().begin(), prompts.front().begin() + shared),
        torch::kInt64);
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
  if (!packed_rows) {
    auto ids = torch::zeros({B, own_width}, torch::kInt64);
    for (int64_t b = 0; b < B; ++b)
      ids[b]
          .narrow(0, own_width - layout.own_lengths[size_t(b)], layout.own_lengths[size_t(b)])
          .copy_(own_tokens(b));
    return model->hidden_states(ids.to(device), inputs, &cache).select(1, own_width - 1);
  }
  // The prompts' own tokens packed into one sequence, on top of the shared keys and values: each
  // linear layer runs one matmul over all of them, and the padding a batch would carry (a
  // quarter of the slots of the demo's PPO prompts after their shared prefix) is not computed;
  // the attention runs prompt by prompt (models/llama.h, PackedRows). A GPU keeps the batch,
  // whose padding costs it little.
  std::vector<int64_t> ids, positions, last_of_row;
  for (int64_t b = 0; b < B; ++b) {
    const auto& p = prompts[size_t(b)];
    ids.insert(ids.end(), p.begin() + shared, p.end());
    for (int64_t at = shared; at < int64_t(p.size()); ++at) positions.push_back(at);
    last_of_row.push_back(int64_t(ids.size()) - 1);
  }
  AttentionInputs packed{torch::tensor(positions, torch::kInt64).unsqueeze(0).to(device),
                         inputs.key_mask,
                         {layout.own_lengths, own_width}};
  const auto h = model->hidden_states(torch::tensor(ids, torch::kInt64).unsqueeze(0).to(device),
                                      packed, &cache);
  return h[0].index_select(0, torch::tensor(last_of_row, torch::kInt64).to(device));
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
  const bool share = o.share_prompt_prefix && B > 1 && !config.sliding_window;
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
      prefill(model, prompts, layout, inputs, share && device.is_cpu(), cache);
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
    // the host needs those for the EOS and stop checks, not the whole vocabulary.
    auto log_probs =
        torch::log_softmax(logits.to(torch::kFloat32) / (o.greedy ? 1.0 : o.temperature), -1);
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
