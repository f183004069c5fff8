// The HF `config.json` of a checkpoint of the Llama-shaped families citeforge runs (Llama 2/3.x,
// Mistral, Qwen2/2.5, Qwen3), read as-is. What they differ in is a field here, never a branch on
// the family name: RoPE scaling, attention biases, per-head q/k norms.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace citeforge::models {

// How positions become rotation frequencies, as transformers' rope_type defines them
// (modeling_rope_utils): "default" (theta alone), "linear" (positions divided by factor),
// "dynamic" (NTK: theta grows with the sequence past the original context), "llama3" (low
// frequencies divided by factor, high ones kept, a smooth band between) and "yarn" (per-frequency
// blend of interpolation and extrapolation, cos/sin scaled by an attention factor).
struct RopeScaling {
  std::string type = "default";
  double factor = 1.0;
  int64_t original_max_positions = 0;  // the context the model was trained on; 0 = unset
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  double beta_fast = 32.0, beta_slow = 1.0;              // yarn
  std::optional<double> attention_factor;                // yarn; unset: from factor and mscale
  std::optional<double> mscale, mscale_all_dim;          // yarn (DeepSeek-style configs)
  bool truncate = true;                                  // yarn: round the blend's band ends
};

struct ModelConfig {
  std::string
      architecture;  // LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // may differ from hidden_size / num_heads (e.g. Mistral Nemo)
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int64_t max_positions = 2048;  // max_position_embeddings as config.json says
  int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  std::optional<int64_t> sliding_window;  // tokens a query may look back, itself included
  bool qkv_bias = false;  // q/k/v projections have biases (Qwen2; Llama's attention_bias)
  bool o_bias = false;    // the output projection has one too (Llama's attention_bias)
  bool qk_norm = false;   // per-head RMSNorm of queries and keys before RoPE (Qwen3)
  int64_t bos_token_id = 1;
  std::vector<int64_t> eos_token_ids = {2};
  std::string dtype = "float32";  // storage dtype named by the checkpoint

  // The longest sequence (prompt and answer) the model is run on: max_position_embeddings,
  // times the factor for dynamic RoPE scaling, whose config names the original context (the
  // other scaled types already name the extended one there).
  int64_t context_length() const {
    return rope_scaling.type == "dynamic" ? int64_t(double(max_positions) * rope_scaling.factor)
                                          : max_positions;
  }
};

// Parses the JSON of a config.json; `file` is only used in error messages.
ModelConfig parse_model_config(const nlohmann::json& json, const std::string& file);
ModelConfig read_model_config(const std::string& path);

// The config.json HF writes for `config` (used when citeforge creates a base model).
nlohmann::json model_config_to_json(const ModelConfig& config);

}  // namespace citeforge::models
