// A GGUF file of a family fixture (tests/fixtures/families/) as llama.cpp's converter lays it
// out, for the tests that import such files ([families][gguf]) and run them ([families][pipeline]).
#pragma once

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "models/gguf_import.h"
#include "models/hf_config.h"
#include "models/safetensors.h"
#include "tests/models/byte_level_tokens.h"
#include "tests/models/gguf_builder.h"
#include "tests/support/test_paths.h"

namespace citeforge::testing {

// llama.cpp's converter's `rope_freqs` for a llama3-scaled config (conversion/llama.py,
// generate_extra_tensors), written out here from its Python: per frequency, 1 above the
// high-frequency wavelength, the factor below the low one, a blend between.
inline std::vector<float> converter_rope_freqs(const models::ModelConfig& c) {
  const auto& s = c.rope_scaling;
  const double context = double(s.original_max_positions);
  std::vector<float> out;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const float freq = 1.0f / std::pow(float(c.rope_theta), float(i) / float(c.head_dim));
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < context / s.high_freq_factor) {
      out.push_back(1.0f);
    } else if (wavelen > context / s.low_freq_factor) {
      out.push_back(float(s.factor));
    } else {
      const double smooth =
          (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      out.push_back(float(1 / ((1 - smooth) / s.factor + smooth)));
    }
  }
  return out;
}

// A GGUF file of an HF fixture as llama.cpp's converter lays it out: the architecture's own
// metadata keys; for llama, q/k rows interleaved per head and a llama3 scaling as `rope_freqs`;
// for qwen2 and qwen3, HF's q/k row order (those architectures use the NEOX RoPE, so the
// converter does not interleave them), biases and q/k norms under their llama.cpp names; every
// tensor F32. The tokenizer is the 256-token byte-level alphabet followed by `specials` (control
// tokens; BOS and EOS among them by index, -1 for none), so the embedding (and an untied head)
// gain zero rows past the fixture's 96: logits compare on the fixture's own ids and columns.
// `context` > 0 replaces the fixture's context length.
inline std::string family_gguf(const std::string& dir, const std::string& name,
                               const std::string& arch,
                               const std::vector<std::string>& specials = {}, int64_t bos = -1,
                               int64_t eos = -1, int64_t context = 0) {
  const auto config = models::read_model_config(dir + "/config.json");
  const auto weights = models::open_safetensors(dir);
  GgufBuilder b;
  b.str("general.architecture", arch);
  auto key = [&](const std::string& suffix) { return arch + "." + suffix; };
  b.u32(key("block_count"), uint32_t(config.num_layers));
  b.u32(key("context_length"), uint32_t(context > 0 ? context : config.max_positions));
  b.u32(key("embedding_length"), uint32_t(config.hidden_size));
  b.u32(key("feed_forward_length"), uint32_t(config.intermediate_size));
  b.u32(key("attention.head_count"), uint32_t(config.num_heads));
  b.u32(key("attention.head_count_kv"), uint32_t(config.num_kv_heads));
  b.u32(key("attention.key_length"), uint32_t(config.head_dim));
  b.f32(key("rope.freq_base"), float(config.rope_theta));
  b.f32(key("attention.layer_norm_rms_epsilon"), float(config.rms_norm_eps));
  auto tokens = byte_level_tokens();
  std::vector<int32_t> types(tokens.size(), 1);
  for (const auto& s : specials) tokens.push_back(s), types.push_back(3);
  const int64_t rows = int64_t(tokens.size());
  b.str("tokenizer.ggml.model", "gpt2");
  b.str("tokenizer.ggml.pre", "gpt-2");
  b.strings("tokenizer.ggml.tokens", tokens);
  b.i32s("tokenizer.ggml.token_type", types);
  b.strings("tokenizer.ggml.merges", {});
  if (bos >= 0) b.u32("tokenizer.ggml.bos_token_id", uint32_t(256 + bos));
  if (eos >= 0) b.u32("tokenizer.ggml.eos_token_id", uint32_t(256 + eos));
  for (const auto& hf : weights.names()) {
    const std::string gguf = models::gguf_tensor_name(hf);
    REQUIRE_FALSE(gguf.empty());
    auto t = weights.get(hf).to(torch::kFloat32).contiguous();
    if (arch == "llama" && hf.ends_with("q_proj.weight"))
      t = models::llama_cpp_rows(t, config.num_heads).contiguous();
    if (arch == "llama" && hf.ends_with("k_proj.weight"))
      t = models::llama_cpp_rows(t, config.num_kv_heads).contiguous();
    if (hf == "model.embed_tokens.weight" || hf == "lm_head.weight")
      t = torch::cat({t, torch::zeros({rows - t.size(0), t.size(1)})}).contiguous();
    std::vector<uint64_t> dims(t.sizes().rbegin(), t.sizes().rend());
    b.f32_tensor(gguf, dims,
                 std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel()));
  }
  if (config.rope_scaling.type == "llama3") {
    const auto freqs = converter_rope_freqs(config);
    b.f32_tensor("rope_freqs.weight", {uint64_t(freqs.size())}, freqs);
  }
  const auto path = (temp_dir("family_gguf_" + name) / (name + ".gguf")).string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

}  // namespace citeforge::testing
