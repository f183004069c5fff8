#include "models/hf_config.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace citeforge::models {
namespace {

using nlohmann::json;

template <typename T>
T field(const json& j, const std::string& key, const std::string& file, std::optional<T> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    fail_at(file, "field '" + key + "'", "missing");
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    fail_at(file, "field '" + key + "'", "unexpected type " + std::string(it->type_name()));
  }
}

int64_t positive(const json& j, const std::string& key, const std::string& file,
                 std::optional<int64_t> fallback = std::nullopt) {
  int64_t value = field<int64_t>(j, key, file, fallback);
  if (value <= 0)
    fail_at(file, "field '" + key + "'", "must be positive, got " + std::to_string(value));
  return value;
}

std::string architecture_of(const json& j, const std::string& file) {
  static const std::vector<std::string> supported = {"LlamaForCausalLM", "MistralForCausalLM"};
  std::vector<std::string> named;
  if (auto it = j.find("architectures"); it != j.end() && it->is_array())
    for (const auto& a : *it)
      if (a.is_string()) named.push_back(a.get<std::string>());
  if (named.empty() && j.contains("model_type") && j["model_type"].is_string()) {
    std::string type = j["model_type"];
    if (type == "llama") named.push_back("LlamaForCausalLM");
    if (type == "mistral") named.push_back("MistralForCausalLM");
  }
  for (const auto& name : named)
    for (const auto& ok : supported)
      if (name == ok) return name;
  std::string seen = named.empty() ? "none" : named.front();
  fail_at(
      file, "field 'architectures'",
      "unsupported architecture '" + seen + "' (supported: LlamaForCausalLM, MistralForCausalLM)");
}

// Newer transformers nest rope settings under rope_parameters; older ones use rope_theta plus
// rope_scaling. Only the default (unscaled) RoPE is implemented, so anything else is an error
// rather than silently wrong logits.
double rope_theta_of(const json& j, const std::string& file) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_object()) fail_at(file, std::string("field '") + key + "'", "expected an object");
    std::string type = it->value("rope_type", it->value("type", std::string("default")));
    if (type != "default")
      fail_at(file, std::string("field '") + key + "'", "unsupported RoPE scaling '" + type + "'");
    if (it->contains("rope_theta")) return field<double>(*it, "rope_theta", file, std::nullopt);
  }
  return field<double>(j, "rope_theta", file, 10000.0);
}

}  // namespace

ModelConfig parse_model_config(const json& j, const std::string& file) {
  if (!j.is_object()) fail_at(file, "", "config.json must hold a JSON object");
  ModelConfig c;
  c.architecture = architecture_of(j, file);
  c.hidden_size = positive(j, "hidden_size", file);
  c.intermediate_size = positive(j, "intermediate_size", file);
  c.num_layers = positive(j, "num_hidden_layers", file);
  c.num_heads = positive(j, "num_attention_heads", file);
  c.num_kv_heads = positive(j, "num_key_value_heads", file, c.num_heads);
  if (c.num_heads % c.num_kv_heads != 0)
    fail_at(file, "field 'num_key_value_heads'",
            std::to_string(c.num_kv_heads) + " does not divide num_attention_heads " +
                std::to_string(c.num_heads));
  if (c.hidden_size % c.num_heads != 0 && !j.contains("head_dim"))
    fail_at(file, "field 'head_dim'", "missing and hidden_size is not divisible by the head count");
  c.head_dim = positive(j, "head_dim", file, c.hidden_size / c.num_heads);
  c.rms_norm_eps = field<double>(j, "rms_norm_eps", file, 1e-6);
  c.rope_theta = rope_theta_of(j, file);
  c.max_positions = positive(j, "max_position_embeddings", file, 2048);
  c.vocab_size = positive(j, "vocab_size", file);
  c.tie_word_embeddings = field<bool>(j, "tie_word_embeddings", file, false);
  if (j.contains("sliding_window") && !j["sliding_window"].is_null() &&
      field<bool>(j, "use_sliding_window", file, true))
    c.sliding_window = positive(j, "sliding_window", file);
  c.bos_token_id = field<int64_t>(j, "bos_token_id", file, 1);
  if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    c.eos_token_ids.clear();
    if (it->is_array())
      for (const auto& id : *it) c.eos_token_ids.push_back(id.get<int64_t>());
    else
      c.eos_token_ids.push_back(field<int64_t>(j, "eos_token_id", file, std::nullopt));
  }
  c.dtype = j.value("torch_dtype", j.value("dtype", std::string("float32")));
  for (const char* flag : {"attention_bias", "mlp_bias"})
    if (field<bool>(j, flag, file, false))
      fail_at(file, std::string("field '") + flag + "'", "biases are not supported");
  if (auto act = j.value("hidden_act", std::string("silu")); act != "silu")
    fail_at(file, "field 'hidden_act'", "unsupported activation '" + act + "' (expected silu)");
  return c;
}

ModelConfig read_model_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_at(path, "", "cannot open");
  json j;
  try {
    in >> j;
  } catch (const json::parse_error& e) {
    fail_at(path, "byte " + std::to_string(e.byte), "invalid JSON");
  }
  return parse_model_config(j, path);
}

json model_config_to_json(const ModelConfig& c) {
  json j = {{"architectures", {c.architecture}},
            {"model_type", c.architecture == "MistralForCausalLM" ? "mistral" : "llama"},
            {"hidden_size", c.hidden_size},
            {"intermediate_size", c.intermediate_size},
            {"num_hidden_layers", c.num_layers},
            {"num_attention_heads", c.num_heads},
            {"num_key_value_heads", c.num_kv_heads},
            {"head_dim", c.head_dim},
            {"rms_norm_eps", c.rms_norm_eps},
            {"rope_theta", c.rope_theta},
            {"max_position_embeddings", c.max_positions},
            {"vocab_size", c.vocab_size},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"hidden_act", "silu"},
            {"attention_bias", false},
            {"mlp_bias", false},
            {"bos_token_id", c.bos_token_id},
            {"torch_dtype", c.dtype}};
  j["sliding_window"] = c.sliding_window ? json(*c.sliding_window) : json(nullptr);
  j["eos_token_id"] =
      c.eos_token_ids.size() == 1 ? json(c.eos_token_ids[0]) : json(c.eos_token_ids);
  return j;
}

}  // namespace citeforge::models
