// A complete one-layer Llama GGUF built in memory, and the hostile variants of it the import
// tests feed to the reader and the CLI (tests/models/test_gguf.cpp,
// tests/trainer/cli/test_hostile_inputs.cpp).
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/models/byte_level_tokens.h"
#include "tests/models/gguf_builder.h"

namespace citeforge::testing {

// llama.cpp's converter permutation of q/k rows (the inverse of what the importer applies).
inline torch::Tensor llama_cpp_permute(const torch::Tensor& w, int64_t heads) {
  return w.reshape({heads, 2, w.size(0) / heads / 2, w.size(1)}).transpose(1, 2).reshape(w.sizes());
}

inline std::vector<float> values_of(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// What a hostile variant of the tiny GGUF changes: metadata that contradicts its tensors, a
// missing tensor, NaN weights.
struct TinyGgufOptions {
  uint32_t block_count = 1, embedding_length = 8, head_count = 2;
  bool without_ffn_down = false;
  bool nan_in_up = false;
};

// A complete one-layer Llama GGUF with a byte-level vocabulary of 256 bytes, two merges and two
// special tokens; q/k stored permuted the way llama.cpp writes them.
struct TinyGguf {
  GgufBuilder b;
  std::map<std::string, torch::Tensor> hf;  // the HF-order weights it encodes

  explicit TinyGguf(const TinyGgufOptions& o = {}) {
    const int64_t hidden = 8, heads = 2, kv_heads = 1, head_dim = 4, ffn = 16;
    b.str("general.architecture", "llama");
    b.str("general.name", "Tiny Llama");
    b.str("general.license", "apache-2.0");
    b.u32("llama.block_count", o.block_count);
    b.u32("llama.context_length", 64);
    b.u32("llama.embedding_length", o.embedding_length);
    b.u32("llama.feed_forward_length", ffn);
    b.u32("llama.attention.head_count", o.head_count);
    b.u32("llama.attention.head_count_kv", kv_heads);
    b.f32("llama.rope.freq_base", 10000.0f);
    b.f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    auto tokens = byte_level_tokens();
    tokens.push_back("Ġt");
    tokens.push_back("Ġth");
    tokens.push_back("<|im_start|>");
    tokens.push_back("<|im_end|>");
    std::vector<int32_t> types(tokens.size(), 1);
    types[tokens.size() - 2] = types[tokens.size() - 1] = 3;
    b.str("tokenizer.ggml.model", "gpt2");
    b.str("tokenizer.ggml.pre", "smollm");
    b.strings("tokenizer.ggml.tokens", tokens);
    b.i32s("tokenizer.ggml.token_type", types);
    b.strings("tokenizer.ggml.merges", {"Ġ t", "Ġt h"});
    b.u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(tokens.size() - 2));
    b.u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(tokens.size() - 1));
    b.boolean("tokenizer.ggml.add_bos_token", false);
    b.str("tokenizer.chat_template", "{{ messages }}");
    const auto vocab = static_cast<int64_t>(tokens.size());
    torch::manual_seed(3);
    auto add = [&](const std::string& gguf, const std::string& name, torch::Tensor w,
                   int64_t permute_heads = 0) {
      hf[name] = w;
      auto stored = permute_heads ? llama_cpp_permute(w, permute_heads) : w;
      std::vector<uint64_t> dims(stored.sizes().rbegin(), stored.sizes().rend());
      b.f32_tensor(gguf, dims, values_of(stored));
    };
    add("token_embd.weight", "model.embed_tokens.weight", torch::randn({vocab, hidden}));
    add("output_norm.weight", "model.norm.weight", torch::rand({hidden}) + 0.5);
    add("blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight", torch::rand({hidden}));
    add("blk.0.ffn_norm.weight", "model.layers.0.post_attention_layernorm.weight",
        torch::rand({hidden}));
    add("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight",
        torch::randn({heads * head_dim, hidden}), heads);
    add("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight",
        torch::randn({kv_heads * head_dim, hidden}), kv_heads);
    add("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight",
        torch::randn({kv_heads * head_dim, hidden}));
    add("blk.0.attn_output.weight", "model.layers.0.self_attn.o_proj.weight",
        torch::randn({hidden, heads * head_dim}));
    add("blk.0.ffn_gate.weight", "model.layers.0.mlp.gate_proj.weight",
        torch::randn({ffn, hidden}));
    auto up = torch::randn({ffn, hidden});
    if (o.nan_in_up) up[3][1] = std::nan("");
    add("blk.0.ffn_up.weight", "model.layers.0.mlp.up_proj.weight", up);
    if (!o.without_ffn_down)
      add("blk.0.ffn_down.weight", "model.layers.0.mlp.down_proj.weight",
          torch::randn({hidden, ffn}));
  }
};

}  // namespace citeforge::testing
