#include "models/llama.h"

#include <cmath>
#include <limits>

#include "common/error.h"
#include "models/cpu_attention.h"
#include "models/grad_checkpoint.h"
#include "models/rope.h"

namespace citeforge::models {
namespace {

// The most negative finite value of a floating dtype.
double lowest_value(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kBFloat16:
      return double(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kHalf:
      return double(std::numeric_limits<c10::Half>::lowest());
    case torch::kFloat64:
      return std::numeric_limits<double>::lowest();
    default:
      return std::numeric_limits<float>::lowest();
  }
}

// ATen's fused attention (a flash kernel on a CPU too) never materialises the [B, H, T, S]
// score matrix and shares each kv head among its query heads itself (grouped-query). An
// undefined bias means plain causal attention over the new tokens alone.
// On a GPU only the flash kernel shares kv heads itself, and it takes no bias: with a bias, a
// pass over whole sequences repeats the kv heads so that the memory-efficient kernel, not the
// unfused fallback that writes the scores out, takes the call. A decoding step (one query per
// row) is left as it was measured on a GPU before.
torch::Tensor fused_attention(const torch::Tensor& q, torch::Tensor k, torch::Tensor v,
                              const torch::Tensor& bias, int64_t groups) {
  bool grouped = groups > 1;
  if (grouped && bias.defined() && q.is_cuda() && q.size(2) > 1) {
    k = k.repeat_interleave(groups, 1);
    v = v.repeat_interleave(groups, 1);
    grouped = false;
  }
  return torch::scaled_dot_product_attention(
      q, k, v, bias.defined() ? std::optional<torch::Tensor>(bias) : std::nullopt,
      /*dropout_p=*/0.0, /*is_causal=*/!bias.defined(), /*scale=*/std::nullopt, grouped);
}

}  // namespace

torch::Tensor exact_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const torch::Tensor& bias, int64_t groups,
                              torch::Tensor* mass) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), S = k.size(2);
  const auto stacked = q.reshape({B, H / groups, groups * T, D});
  auto scores = torch::matmul(stacked, k.transpose(-2, -1)).view({B, H, T, S}).to(torch::kFloat32) /
                std::sqrt(double(D));
  auto probs = torch::softmax(scores + bias, -1);
  if (mass) {
    auto heads = probs.sum(1);
    *mass = mass->defined() ? *mass + heads : heads;
  }
  return torch::matmul(probs.to(q.scalar_type()).view({B, H / groups, groups * T, S}), v)
      .view({B, H, T, D});
}

torch::Tensor attention_allowed(const torch::Tensor& key_mask, int64_t batch, int64_t past,
                                int64_t new_tokens, std::optional<int64_t> sliding_window,
                                const torch::Device& device) {
  const int64_t total = past + new_tokens;
  auto opts = torch::TensorOptions().dtype(torch::kInt64).device(device);
  auto q = torch::arange(past, total, opts).unsqueeze(1);  // [T, 1] query slots
  auto k = torch::arange(0, total, opts).unsqueeze(0);     // [1, S] key slots
  auto allowed = k <= q;
  // Slots, not positions: with left padding the two differ only by a per-row constant.
  if (sliding_window) allowed = allowed & (q - k < *sliding_window);
  allowed = allowed.unsqueeze(0).expand({batch, new_tokens, total});
  if (key_mask.defined()) allowed = allowed & key_mask.to(torch::kBool).unsqueeze(1);
  return allowed;
}

bool fused_attention_applies(torch::Dtype dtype, const torch::Device& device, int64_t past,
                             bool reads_attention) {
  return !reads_attention && (dtype == torch::kFloat32 || (device.is_cuda() && past == 0));
}

torch::Tensor attention_bias(const torch::Tensor& allowed, torch::Dtype dtype) {
  // The dtype's lowest value rather than -inf keeps fully masked rows (the queries of left
  // padding) finite: they spread evenly over every key and are never read.
  return torch::zeros(allowed.sizes(), torch::TensorOptions().dtype(dtype).device(allowed.device()))
      .masked_fill(allowed.logical_not(), lowest_value(dtype))
      .unsqueeze(1);
}

namespace {

// Up to this many bias values attention_bias_of fills its loop.
constexpr int64_t kBiasLoopMaxValues = int64_t(1) << 20;

template <class Scalar>
void fill_bias(const bool* key_mask, int64_t batch, int64_t past, int64_t new_tokens,
               std::optional<int64_t> sliding_window, Scalar masked, Scalar* out) {
  const int64_t total = past + new_tokens;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < new_tokens; ++t) {
      const int64_t query = past + t;
      Scalar* row = out + (b * new_tokens + t) * total;
      for (int64_t key = 0; key < total; ++key) {
        bool allowed = key <= query;
        if (sliding_window) allowed = allowed && query - key < *sliding_window;
        if (key_mask) allowed = allowed && key_mask[b * total + key];
        row[key] = allowed ? Scalar(0) : masked;
      }
    }
}

}  // namespace

torch::Tensor attention_bias_of(const torch::Tensor& key_mask, int64_t batch, int64_t past,
                                int64_t new_tokens, std::optional<int64_t> sliding_window,
                                const torch::Device& device, torch::Dtype dtype) {
  const int64_t total = past + new_tokens;
  const bool loop = device.is_cpu() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
                    batch * new_tokens * total <= kBiasLoopMaxValues &&
                    (!key_mask.defined() ||
                     (key_mask.device().is_cpu() && key_mask.scalar_type() == torch::kBool &&
                      key_mask.dim() == 2 && key_mask.size(0) == batch &&
                      key_mask.size(1) == total && key_mask.is_contiguous()));
  if (!loop)
    return attention_bias(
        attention_allowed(key_mask, batch, past, new_tokens, sliding_window, device), dtype);
  auto out = torch::empty({batch, 1, new_tokens, total}, torch::TensorOptions().dtype(dtype));
  const bool* mask = key_mask.defined() ? key_mask.data_ptr<bool>() : nullptr;
  if (dtype == torch::kFloat32)
    fill_bias(mask, batch, past, new_tokens, sliding_window, float(lowest_value(dtype)),
              out.data_ptr<float>());
  else
    fill_bias(mask, batch, past, new_tokens, sliding_window,
              c10::BFloat16(float(lowest_value(dtype))), out.data_ptr<c10::BFloat16>());
  return out;
}

AttentionImpl::AttentionImpl(const ModelConfig& c, bool allocate)
    : num_heads(c.num_heads), num_kv_heads(c.num_kv_heads), head_dim(c.head_dim) {
  const int64_t q_out = c.num_heads * c.head_dim, kv_out = c.num_kv_heads * c.head_dim;
  q_proj = register_module("q_proj", Linear(c.hidden_size, q_out, allocate, c.qkv_bias));
  k_proj = register_module("k_proj", Linear(c.hidden_size, kv_out, allocate, c.qkv_bias));
  v_proj = register_module("v_proj", Linear(c.hidden_size, kv_out, allocate, c.qkv_bias));
  o_proj = register_module("o_proj", Linear(q_out, c.hidden_size, allocate, c.o_bias));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", RMSNorm(c.head_dim, c.rms_norm_eps));
    k_norm = register_module("k_norm", RMSNorm(c.head_dim, c.rms_norm_eps));
  }
}

namespace {

// One batch's attention, by the path its shape and dtype take (see the kernels above).
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const torch::Tensor& bias, int64_t groups, int64_t past,
                     torch::Tensor* attention_mass) {
  const bool reads_attention = attention_mass != nullptr;
  if (decode_attention_applies(q, k, q.size(2), reads_attention))
    return decode_attention_cpu(q, k, v, bias, groups);
  if (fused_attention_applies(q.scalar_type(), q.device(), past, reads_attention))
    return fused_attention(q, k, v, bias, groups);
  return exact_attention(q, k, v, bias, groups, attention_mass);
}

// Packed rows' keys and values into their rows of the cache, then each row's queries against
// its row alone: the matmuls around this ran over all rows' tokens at once, the attention runs
// row by row, so no row attends to another's tokens or computes padding queries.
torch::Tensor packed_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const torch::Tensor& bias, KVCache& cache,
                               int64_t layer, int64_t groups, const PackedRows& packed) {
  const int64_t past = cache.length, total = past + packed.width;
  std::vector<torch::Tensor> rows;
  int64_t offset = 0;
  auto& keys = cache.keys[size_t(layer)];
  auto& values = cache.values[size_t(layer)];
  for (size_t b = 0; b < packed.lengths.size(); ++b) {
    const int64_t row = int64_t(b), own = packed.lengths[b], first_slot = total - own;
    keys[row].narrow(1, first_slot, own).copy_(k[0].narrow(1, offset, own));
    values[row].narrow(1, first_slot, own).copy_(v[0].narrow(1, offset, own));
    const auto row_bias = bias.narrow(0, row, 1).narrow(2, packed.width - own, own);
    rows.push_back(attend(q.narrow(2, offset, own), keys.narrow(0, row, 1).narrow(2, 0, total),
                          values.narrow(0, row, 1).narrow(2, 0, total), row_bias, groups,
                          first_slot, nullptr));
    offset += own;
  }
  return torch::cat(rows, 2);
}

}  // namespace

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin, const torch::Tensor& attn_bias,
                                     KVCache* cache, int64_t layer, torch::Tensor* attention_mass,
                                     const PackedRows* packed) {
  const int64_t B = x.size(0), T = x.size(1);
  auto qkv = linears_of_one_input(x, {q_proj.get(), k_proj.get(), v_proj.get()});
  auto q = qkv[0].view({B, T, num_heads, head_dim});
  auto k = qkv[1].view({B, T, num_kv_heads, head_dim});
  if (q_norm) {  // per head, before the rotation
    q = q_norm(q);
    k = k_norm(k);
  }
  q = q.transpose(1, 2);
  k = k.transpose(1, 2);
  auto v = qkv[2].view({B, T, num_kv_heads, head_dim}).transpose(1, 2);
  q = apply_rope(q, cos, sin);
  // With a preallocated cache the rotated keys are written straight into their slots below.
  const bool keys_into_cache = cache && !cache->grows && !packed;
  if (!keys_into_cache) k = apply_rope(k, cos, sin);
  const int64_t groups = num_heads / num_kv_heads;
  const int64_t past = cache ? cache->length : 0;
  const int64_t new_slots = packed ? packed->width : T;  // packed: T counts all rows' tokens
  if (cache && !cache->grows)
    TORCH_CHECK(past + new_slots <= cache->capacity(), "KV cache full: ", past + new_slots, " > ",
                cache->capacity());
  torch::Tensor out;
  if (packed) {
    TORCH_CHECK(cache && !cache->grows && !attention_mass,
                "packed rows need a preallocated cache and read no attention");
    out = packed_attention(q, k, v, attn_bias, *cache, layer, groups, *packed);
  } else {
    if (cache && cache->grows) {
      auto& keys = cache->keys[size_t(layer)];
      auto& values = cache->values[size_t(layer)];
      if (keys.defined()) {  // expanded, so that backward sums the rows' gradients into them
        k = torch::cat({keys.expand({B, -1, -1, -1}), k}, 2);
        v = torch::cat({values.expand({B, -1, -1, -1}), v}, 2);
      }
      keys = k;
      values = v;
    } else if (cache) {
      apply_rope_into(k, cos, sin, cache->keys[layer].narrow(2, past, T));
      cache->values[layer].narrow(2, past, T).copy_(v);
      k = cache->keys[layer].narrow(2, 0, past + T);
      v = cache->values[layer].narrow(2, 0, past + T);
    }
    out = attend(q, k, v, attn_bias, groups, past, attention_mass);
  }
  out = out.transpose(1, 2).reshape({B, T, num_heads * head_dim});
  return o_proj(out);
}

MlpImpl::MlpImpl(const ModelConfig& c, bool allocate) {
  gate_proj = register_module("gate_proj", Linear(c.hidden_size, c.intermediate_size, allocate));
  up_proj = register_module("up_proj", Linear(c.hidden_size, c.intermediate_size, allocate));
  down_proj = register_module("down_proj", Linear(c.intermediate_size, c.hidden_size, allocate));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  const auto gate_up = linears_of_one_input(x, {gate_proj.get(), up_proj.get()});
  return down_proj(torch::silu(gate_up[0]) * gate_up[1]);
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c, bool allocate) {
  self_attn = register_module("self_attn", Attention(c, allocate));
  mlp = register_module("mlp", Mlp(c, allocate));
  input_layernorm = register_module("input_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin, const torch::Tensor& attn_bias,
                                        KVCache* cache, int64_t layer,
                                        torch::Tensor* attention_mass, const PackedRows* packed) {
  auto h =
      x + self_attn(input_layernorm(x), cos, sin, attn_bias, cache, layer, attention_mass, packed);
  return h + mlp(post_attention_layernorm(h));
}

DecoderImpl::DecoderImpl(const ModelConfig& c, bool allocate) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) layers->push_back(DecoderLayer(c, allocate));
  norm = register_module("norm", RMSNorm(c.hidden_size, c.rms_norm_eps));
}

LlamaForCausalLMImpl::LlamaForCausalLMImpl(const ModelConfig& c, bool allocate_block_linears)
    : config(c) {
  model = register_module("model", Decoder(c, allocate_block_linears));
  if (!c.tie_word_embeddings)
    lm_head = register_module("lm_head", Linear(c.hidden_size, c.vocab_size));
}

torch::Tensor LlamaForCausalLMImpl::hidden_states(const torch::Tensor& input_ids,
                                                  const AttentionInputs& inputs, KVCache* cache,
                                                  ForwardProbe* probe) {
  const PackedRows* packed = inputs.packed.lengths.empty() ? nullptr : &inputs.packed;
  if (packed && (!cache || probe || input_ids.size(0) != 1))
    throw Error("hidden_states: packed rows are one sequence through a cache, with no probe");
  const int64_t B = packed ? int64_t(packed->lengths.size()) : input_ids.size(0);
  const int64_t T = packed ? packed->width : input_ids.size(1);
  const int64_t past = cache ? cache->length : 0;
  auto [cos, sin] = rope_tables(inputs.positions, config, rope_cache);
  auto h = model->embed_tokens(input_ids);
  // Built once for all layers: in the model's dtype for the fused kernel, which takes it as it
  // is, in fp32 for the exact attention, which adds it to fp32 scores. Only the fused kernel does
  // plain causal attention without one; padding, a cache or a sliding window need one always.
  torch::Tensor bias;
  const bool read_attention = probe && probe->attention;
  const bool fused = fused_attention_applies(h.scalar_type(), h.device(), past, read_attention);
  if (inputs.key_mask.defined() || past > 0 || config.sliding_window || !fused)
    bias = attention_bias_of(inputs.key_mask, B, past, T, config.sliding_window, input_ids.device(),
                             fused ? h.scalar_type() : torch::kFloat32);
  const bool recompute =
      gradient_checkpointing && torch::GradMode::is_enabled() && !cache && !probe;
  if (read_attention) probe->attention_mass = torch::Tensor();
  for (size_t i = 0; i < model->layers->size(); ++i) {
    auto* layer = model->layers[i]->as<DecoderLayerImpl>();
    if (recompute)
      h = checkpointed(
          [=](const torch::Tensor& x) { return layer->forward(x, cos, sin, bias, nullptr, 0); }, h);
    else
      h = layer->forward(h, cos, sin, bias, cache, int64_t(i),
                         read_attention ? &probe->attention_mass : nullptr, packed);
    if (probe && probe->keep_layer == int64_t(i)) {
      probe->layer_output = h;
      if (probe->stop_at_kept_layer) {
        if (cache) cache->length += T;
        return h;
      }
    }
  }
  if (cache) cache->length += T;
  return model->norm(h);
}

torch::Tensor LlamaForCausalLMImpl::logits(const torch::Tensor& hidden) {
  // In the hidden states' dtype: fp32 states get fp32 logits from a bf16 model.
  const auto& tied = model->embed_tokens->weight;
  // A decoding step of a model with a 4-bit base reads the output layer's 16-bit copy on a CPU:
  // that dense layer is the largest weight a step reads (a fifth of SmolLM2), and its fp32
  // bytes cost twice all the NF4 blocks. A model kept dense keeps its head's numerics.
  const auto* first =
      model->layers->size() > 0 ? model->layers[0]->as<DecoderLayerImpl>() : nullptr;
  const bool nf4_base = first && first->self_attn->q_proj->is_nf4();
  if (nf4_base && (!lm_head || !lm_head->is_nf4())) {
    const auto& head = lm_head ? lm_head->weight : tied;
    if (auto y = fused_output_layer(hidden, head, decoding_head)) {
      if (lm_head && lm_head->bias.defined()) return *y + lm_head->bias.to(y->scalar_type());
      return *y;
    }
  }
  if (lm_head) return lm_head(hidden);
  if (tied.scalar_type() == hidden.scalar_type()) return torch::linear(hidden, tied);
  // A trained tied embedding needs its gradient through the conversion.
  if (tied.requires_grad() && torch::GradMode::is_enabled())
    return torch::linear(hidden, tied.to(hidden.scalar_type()));
  // fp32 logits of a bf16 model: converting the whole embedding matrix on every decoding step
  // would cost more than the step's matmul, so the copy is kept until the weight changes.
  if (!tied_head_copy.defined() || tied_head_copy.scalar_type() != hidden.scalar_type() ||
      !tied_head_stamp.matches(tied)) {
    torch::NoGradGuard no_grad;
    c10::InferenceMode kept_beyond_generation(false);  // training may read it after
    tied_head_copy = tied.detach().to(hidden.scalar_type());
    tied_head_stamp.take(tied);
  }
  return torch::linear(hidden, tied_head_copy);
}

torch::Tensor LlamaForCausalLMImpl::hidden_states(const torch::Tensor& input_ids) {
  AttentionInputs inputs;
  inputs.positions =
      torch::arange(input_ids.size(1),
                    torch::TensorOptions().dtype(torch::kInt64).device(input_ids.device()))
          .unsqueeze(0)
          .expand({input_ids.size(0), input_ids.size(1)});
  return hidden_states(input_ids, inputs);
}

torch::Tensor LlamaForCausalLMImpl::forward(const torch::Tensor& input_ids) {
  return logits(hidden_states(input_ids));
}

}  // namespace citeforge::models
