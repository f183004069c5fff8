// The Llama-shaped decoder (Llama 2/3.x, Mistral, Qwen2/2.5, Qwen3) with HF parameter names, so
// an HF checkpoint loads directly: embeddings, N blocks of (RMSNorm, grouped-query attention
// with RoPE (scaled or not), optional q/k/v biases, optional per-head q/k RMSNorm and an
// optional sliding window, residual, RMSNorm, SwiGLU MLP, residual), final RMSNorm and an LM
// head, tied or not.
#pragma once

#include <torch/torch.h>

#include "models/fused_matmul.h"
#include "models/hf_config.h"
#include "models/kv_cache.h"
#include "models/linear.h"
#include "models/rope.h"
#include "models/weight_stamp.h"

namespace citeforge::models {

// A batch's new tokens packed into one sequence, so that each linear layer runs one matmul over
// all of them and none over padding (a CPU prefill after a shared prefix): row b's `lengths[b]`
// tokens follow row b - 1's, go to the last lengths[b] of the `width` new slots of row b of the
// cache, and attend to that row alone, as the left-padded batch of `width` would.
struct PackedRows {
  std::vector<int64_t> lengths;  // empty: not packed
  int64_t width = 0;
};

// What one forward pass sees besides the token ids.
struct AttentionInputs {
  torch::Tensor positions;  // [B, T] RoPE positions of the new tokens (int64)
  torch::Tensor key_mask;   // [B, past + T] bool: which key slots hold real tokens; undefined = all
  // Set: the token ids and positions are [1, N] (N the lengths' sum), B and T above are the
  // cache's rows and `packed.width`, and a cache is required.
  PackedRows packed{};
};

// What a forward pass can keep for reading the model instead of running it (citation
// correction from the model's own attention and hidden states, attribution/model_scores.h).
struct ForwardProbe {
  bool attention = false;           // sum the attention probabilities over heads and layers
  torch::Tensor attention_mass;     // [B, T, S] fp32, filled when `attention` is set
  int64_t keep_layer = -1;          // keep the output of this decoder block (0-based), if >= 0
  torch::Tensor layer_output;       // [B, T, hidden]
  bool stop_at_kept_layer = false;  // skip the blocks after it (the pass returns layer_output)
};

struct AttentionImpl : torch::nn::Module {
  AttentionImpl(const ModelConfig& config, bool allocate = true);
  // With `attention_mass`, the attention is computed with explicit probabilities (needs the
  // bias) and their sum over heads, [B, T, S] in fp32, is added to it. With `packed`, x is
  // [1, N, hidden] (see PackedRows), attn_bias the batch's [B, 1, width, S] and a cache needed.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& attn_bias, KVCache* cache, int64_t layer,
                        torch::Tensor* attention_mass = nullptr,
                        const PackedRows* packed = nullptr);

  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};  // over each head's dim (Qwen3); null elsewhere
  int64_t num_heads, num_kv_heads, head_dim;
};
TORCH_MODULE(Attention);

struct MlpImpl : torch::nn::Module {
  MlpImpl(const ModelConfig& config, bool allocate = true);
  torch::Tensor forward(const torch::Tensor& x);

  Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Mlp);

struct DecoderLayerImpl : torch::nn::Module {
  DecoderLayerImpl(const ModelConfig& config, bool allocate = true);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& attn_bias, KVCache* cache, int64_t layer,
                        torch::Tensor* attention_mass = nullptr,
                        const PackedRows* packed = nullptr);

  Attention self_attn{nullptr};
  Mlp mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(DecoderLayer);

// HF's LlamaModel: everything but the LM head.
struct DecoderImpl : torch::nn::Module {
  DecoderImpl(const ModelConfig& config, bool allocate = true);

  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers;
  RMSNorm norm{nullptr};
};
TORCH_MODULE(Decoder);

struct LlamaForCausalLMImpl : torch::nn::Module {
  // `allocate_block_linears = false` leaves the decoder blocks' projection weights unallocated,
  // for a loader that quantises them one by one (models/checkpoint_io.h); the LM head, which
  // QLoRA keeps dense, is always allocated.
  explicit LlamaForCausalLMImpl(const ModelConfig& config, bool allocate_block_linears = true);

  // Final hidden states [B, T, hidden] of `input_ids` [B, T]. With a cache, the new keys and
  // values are written after cache->length and the length advances by T. A `probe` keeps what
  // it asks for (no gradient checkpointing then).
  torch::Tensor hidden_states(const torch::Tensor& input_ids, const AttentionInputs& inputs,
                              KVCache* cache = nullptr, ForwardProbe* probe = nullptr);
  torch::Tensor logits(const torch::Tensor& hidden);
  // Logits of unpadded sequences [B, T] starting at position 0, no cache.
  torch::Tensor forward(const torch::Tensor& input_ids);
  // Final hidden states of unpadded sequences [B, T] starting at position 0, no cache (so a
  // caller can take logits where it needs them only: the LM head of a 49k vocabulary costs as
  // much as several decoder blocks).
  torch::Tensor hidden_states(const torch::Tensor& input_ids);

  ModelConfig config;
  // Recompute each decoder block in the backward pass instead of keeping its activations
  // (training only; models/grad_checkpoint.h).
  bool gradient_checkpointing = false;
  Decoder model{nullptr};
  Linear lm_head{nullptr};  // null when tied to the embeddings
  // The tied embeddings in the logits' dtype when it differs from theirs (fp32 logits of a bf16
  // model), with what it was copied from.
  torch::Tensor tied_head_copy;
  WeightStamp tied_head_stamp;
  // The output layer's 16-bit copy that decoding steps read on a CPU (models/fused_matmul.h).
  DecodingHead decoding_head;
  // RoPE's tables of the positions decoding steps have reached (models/rope.h).
  RopeTableCache rope_cache;
};
TORCH_MODULE(LlamaForCausalLM);

// The [B, T, S] mask of which key slots each new token may attend to: causal, key padding and
// the sliding window. Queries are the T slots after `past`; S = past + T.
torch::Tensor attention_allowed(const torch::Tensor& key_mask, int64_t batch, int64_t past,
                                int64_t new_tokens, std::optional<int64_t> sliding_window,
                                const torch::Device& device);

// `allowed` [B, T, S] as the additive bias fused attention takes: [B, 1, T, S] of `dtype`,
// 0 where attending is allowed and the dtype's lowest value where not.
torch::Tensor attention_bias(const torch::Tensor& allowed, torch::Dtype dtype);

// attention_bias(attention_allowed(...), dtype), the bias a forward pass builds once for all its
// layers. A small call on the CPU (a decoding step's) fills it in one loop instead of a dozen
// operators; the same values.
torch::Tensor attention_bias_of(const torch::Tensor& key_mask, int64_t batch, int64_t past,
                                int64_t new_tokens, std::optional<int64_t> sliding_window,
                                const torch::Device& device, torch::Dtype dtype);

// Attention of a reduced-precision (bf16) model: the scores and the softmax in fp32 on one
// [T, S] matrix per head, with the fp32 `bias` always given. The fused kernel walks a whole
// prompt in blocks but a decoding step in one row, and in bf16 that made the sampler's and the
// learner's log-probabilities of the same sampled tokens differ by up to 0.58 nats on a CPU with
// AMX, twice as much as this way, which keeps the numerics of the unfused attention before it
// (experiments/bench/results/ppo_precision_cpu.md). PPO's ratio reads such a gap as a change of
// policy.
// With `mass`, the probabilities summed over heads are added to it.
// Grouped-query attention (each kv head serving `groups` consecutive query heads) multiplies
// each kv head with its group's queries stacked as one [groups * T, D] matrix, instead of
// repeating the KV cache per query head in every layer at every decoding step.
// Benchmarks time it against the decoding kernel that replaced it on a bf16 CPU step.
torch::Tensor exact_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const torch::Tensor& bias, int64_t groups,
                              torch::Tensor* mass = nullptr);

// Whether attention runs in ATen's fused kernel (scaled_dot_product_attention) rather than
// with its scores written out in fp32: in fp32 on any device; on a GPU in every dtype for a pass
// over whole sequences (training, scoring, a prompt's prefill: no `past` tokens cached), whose
// exact scores, [B, H, T, S] in fp32 per layer kept for the backward pass, made a bf16 SFT step at
// a 7B shape hold 16 GiB more than the Python stack's fused attention; never when the attention
// weights themselves are read. Decoding steps of a reduced-precision model and a bf16 model on a
// CPU keep the exact path (the reasons are in llama.cpp).
bool fused_attention_applies(torch::Dtype dtype, const torch::Device& device, int64_t past,
                             bool reads_attention);

}  // namespace citeforge::models
