// The HF `config.json` of a Llama- or Mistral-family checkpoint, read as-is.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace citeforge::models {

struct ModelConfig {
  std::string architecture;  // "LlamaForCausalLM" or "MistralForCausalLM"
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // may differ from hidden_size / num_heads (e.g. Mistral Nemo)
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  int64_t max_positions = 2048;
  int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  std::optional<int64_t> sliding_window;  // tokens a query may look back, itself included
  int64_t bos_token_id = 1;
  std::vector<int64_t> eos_token_ids = {2};
  std::string dtype = "float32";  // storage dtype named by the checkpoint
};

// Parses the JSON of a config.json; `file` is only used in error messages.
ModelConfig parse_model_config(const nlohmann::json& json, const std::string& file);
ModelConfig read_model_config(const std::string& path);

// The config.json HF writes for `config` (used when citeforge creates a base model).
nlohmann::json model_config_to_json(const ModelConfig& config);

}  // namespace citeforge::models
