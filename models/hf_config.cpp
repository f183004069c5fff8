#include "models/hf_config.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_fits.h"

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
  if (!json_fits<T>(*it))
    fail_at(file, "field '" + key + "'", "expected an integer, got " + it->dump());
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    fail_at(file, "field '" + key + "'", "unexpected type " + std::string(it->type_name()));
  }
}

// The field's value, or nullopt where it is absent or null.
template <typename T>
std::optional<T> optional_field(const json& j, const std::string& key, const std::string& file) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return field<T>(j, key, file, std::nullopt);
}

int64_t positive(const json& j, const std::string& key, const std::string& file,
                 std::optional<int64_t> fallback = std::nullopt) {
  int64_t value = field<int64_t>(j, key, file, fallback);
  if (value <= 0)
    fail_at(file, "field '" + key + "'", "must be positive, got " + std::to_string(value));
  return value;
}

// The architectures citeforge runs, with the model_type transformers writes for each.
const std::vector<std::pair<std::string, std::string>>& known_architectures() {
  static const std::vector<std::pair<std::string, std::string>> known = {
      {"LlamaForCausalLM", "llama"},
      {"MistralForCausalLM", "mistral"},
      {"Qwen2ForCausalLM", "qwen2"},
      {"Qwen3ForCausalLM", "qwen3"}};
  return known;
}

std::string architecture_of(const json& j, const std::string& file) {
  std::vector<std::string> named;
  if (auto it = j.find("architectures"); it != j.end() && it->is_array())
    for (const auto& a : *it)
      if (a.is_string()) named.push_back(a.get<std::string>());
  if (named.empty() && j.contains("model_type") && j["model_type"].is_string())
    for (const auto& [architecture, type] : known_architectures())
      if (j["model_type"] == type) named.push_back(architecture);
  std::string supported;
  for (const auto& [architecture, type] : known_architectures()) {
    supported += (supported.empty() ? "" : ", ") + architecture;
    for (const auto& name : named)
      if (name == architecture) return name;
  }
  std::string seen = named.empty() ? "none" : named.front();
  fail_at(file, "field 'architectures'",
          "unsupported architecture '" + seen + "' (supported: " + supported + ")");
}

// RoPE: transformers 5 writes theta and the scaling together under rope_parameters; 4.x wrote
// rope_theta at the top level and the scaling under rope_scaling (hub checkpoints have both
// layouts). A key this reader does not know could change the numerics, so it is an error, as is
// a RoPE type it does not implement.
void read_rope(const json& j, const std::string& file, ModelConfig& c) {
  c.rope_theta = field<double>(j, "rope_theta", file, 10000.0);
  for (const char* section : {"rope_scaling", "rope_parameters"}) {
    auto it = j.find(section);
    if (it == j.end() || it->is_null()) continue;
    const std::string where = std::string("field '") + section + "'";
    if (!it->is_object()) fail_at(file, where, "expected an object");
    const json& r = *it;
    auto key = [&](const char* name) { return where + " key '" + name + "'"; };
    auto required = [&](const char* name) {
      const auto value = optional_field<double>(r, name, file);
      if (!value) fail_at(file, key(name), "missing (" + c.rope_scaling.type + " RoPE needs it)");
      return *value;
    };
    for (const auto& [name, value] : r.items()) {
      static const std::vector<std::string> known = {"rope_type",
                                                     "type",
                                                     "rope_theta",
                                                     "factor",
                                                     "original_max_position_embeddings",
                                                     "low_freq_factor",
                                                     "high_freq_factor",
                                                     "beta_fast",
                                                     "beta_slow",
                                                     "attention_factor",
                                                     "mscale",
                                                     "mscale_all_dim",
                                                     "truncate",
                                                     "partial_rotary_factor"};
      if (std::find(known.begin(), known.end(), name) == known.end())
        fail_at(file, where + " key '" + name + "'", "unknown RoPE setting");
    }
    if (r.contains("rope_theta")) c.rope_theta = field<double>(r, "rope_theta", file, std::nullopt);
    if (field<double>(r, "partial_rotary_factor", file, 1.0) != 1.0)
      fail_at(file, key("partial_rotary_factor"), "partial rotary embeddings are not supported");
    RopeScaling& s = c.rope_scaling;
    s.type = r.value("rope_type", r.value("type", std::string("default")));
    if (s.type == "default") continue;
    if (s.type != "linear" && s.type != "dynamic" && s.type != "llama3" && s.type != "yarn")
      fail_at(file, key("rope_type"),
              "unsupported RoPE type '" + s.type +
                  "' (supported: default, linear, dynamic, "
                  "llama3, yarn)");
    // The pre-training context: the scaling's own field, else a top-level one (Phi-3 style),
    // else, for llama3 and yarn, max_position_embeddings, as transformers fills it in.
    s.original_max_positions =
        field<int64_t>(r, "original_max_position_embeddings", file,
                       field<int64_t>(j, "original_max_position_embeddings", file, 0));
    if (s.original_max_positions == 0 && (s.type == "llama3" || s.type == "yarn"))
      s.original_max_positions = field<int64_t>(j, "max_position_embeddings", file, 2048);
    // yarn without a factor takes it from the two context lengths.
    if (s.type == "yarn" && !optional_field<double>(r, "factor", file))
      s.factor = double(field<int64_t>(j, "max_position_embeddings", file, 2048)) /
                 double(std::max<int64_t>(s.original_max_positions, 1));
    else
      s.factor = required("factor");
    if (!(s.factor >= 1.0)) fail_at(file, key("factor"), "must be >= 1");
    if (s.type == "llama3") {
      s.low_freq_factor = required("low_freq_factor");
      s.high_freq_factor = required("high_freq_factor");
      if (!(s.high_freq_factor > s.low_freq_factor))
        fail_at(file, key("high_freq_factor"), "must be above low_freq_factor");
    }
    if (s.type == "yarn") {
      s.beta_fast = field<double>(r, "beta_fast", file, 32.0);
      s.beta_slow = field<double>(r, "beta_slow", file, 1.0);
      s.attention_factor = optional_field<double>(r, "attention_factor", file);
      s.mscale = optional_field<double>(r, "mscale", file);
      s.mscale_all_dim = optional_field<double>(r, "mscale_all_dim", file);
      s.truncate = field<bool>(r, "truncate", file, true);
    }
  }
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
  read_rope(j, file, c);
  c.max_positions = positive(j, "max_position_embeddings", file, 2048);
  c.vocab_size = positive(j, "vocab_size", file);
  c.tie_word_embeddings = field<bool>(j, "tie_word_embeddings", file, false);
  const bool qwen = c.architecture == "Qwen2ForCausalLM" || c.architecture == "Qwen3ForCausalLM";
  // Qwen's configs name a window that is off unless use_sliding_window says otherwise, and then
  // applies only from layer max_window_layers on: a per-layer window this decoder lacks.
  const bool use_window = field<bool>(j, "use_sliding_window", file, !qwen);
  if (qwen && use_window)
    fail_at(file, "field 'use_sliding_window'",
            "Qwen's per-layer sliding window is not supported (set it to false)");
  if (auto it = j.find("layer_types"); it != j.end() && it->is_array())
    for (const auto& type : *it)
      if (type != "full_attention" && !(type == "sliding_attention" && !qwen))
        fail_at(file, "field 'layer_types'",
                "unsupported layer type " + type.dump() + " (every layer must be full_attention)");
  if (j.contains("sliding_window") && !j["sliding_window"].is_null() && use_window)
    c.sliding_window = positive(j, "sliding_window", file);
  c.bos_token_id = field<int64_t>(j, "bos_token_id", file, 1);
  if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    c.eos_token_ids.clear();
    if (it->is_array())
      for (const auto& id : *it) {
        if (!json_fits<int64_t>(id))
          fail_at(file, "field 'eos_token_id'", "expected integers, got " + it->dump());
        c.eos_token_ids.push_back(id.get<int64_t>());
      }
    else
      c.eos_token_ids.push_back(field<int64_t>(j, "eos_token_id", file, std::nullopt));
  }
  c.dtype = j.value("torch_dtype", j.value("dtype", std::string("float32")));
  // Qwen2 always has q/k/v biases and none on o_proj; Llama and Qwen3 name theirs
  // attention_bias, which covers q, k, v and o.
  if (c.architecture == "Qwen2ForCausalLM") {
    c.qkv_bias = true;
  } else if (c.architecture != "MistralForCausalLM") {
    c.qkv_bias = c.o_bias = field<bool>(j, "attention_bias", file, false);
  }
  c.qk_norm = c.architecture == "Qwen3ForCausalLM";
  if (field<bool>(j, "mlp_bias", file, false))
    fail_at(file, "field 'mlp_bias'", "MLP biases are not supported");
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
  } catch (const json::exception& e) {  // a number past every type: out_of_range
    fail_at(path, "", std::string("invalid JSON: ") + e.what());
  }
  return parse_model_config(j, path);
}

json model_config_to_json(const ModelConfig& c) {
  std::string model_type = "llama";
  for (const auto& [architecture, type] : known_architectures())
    if (architecture == c.architecture) model_type = type;
  json j = {{"architectures", {c.architecture}},
            {"model_type", model_type},
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
            {"attention_bias", c.o_bias},
            {"mlp_bias", false},
            {"bos_token_id", c.bos_token_id},
            {"torch_dtype", c.dtype}};
  j["sliding_window"] = c.sliding_window ? json(*c.sliding_window) : json(nullptr);
  if (model_type == "qwen2" || model_type == "qwen3") j["use_sliding_window"] = false;
  if (model_type == "qwen2") j.erase("attention_bias");  // always q/k/v biases, no o_proj bias
  if (c.rope_scaling.type != "default") {
    const RopeScaling& s = c.rope_scaling;
    json r = {{"rope_type", s.type}, {"factor", s.factor}};
    if (s.original_max_positions > 0)
      r["original_max_position_embeddings"] = s.original_max_positions;
    if (s.type == "llama3") {
      r["low_freq_factor"] = s.low_freq_factor;
      r["high_freq_factor"] = s.high_freq_factor;
    }
    if (s.type == "yarn") {
      r["beta_fast"] = s.beta_fast;
      r["beta_slow"] = s.beta_slow;
      r["truncate"] = s.truncate;
      if (s.attention_factor) r["attention_factor"] = *s.attention_factor;
      if (s.mscale) r["mscale"] = *s.mscale;
      if (s.mscale_all_dim) r["mscale_all_dim"] = *s.mscale_all_dim;
    }
    j["rope_scaling"] = r;
  }
  j["eos_token_id"] =
      c.eos_token_ids.size() == 1 ? json(c.eos_token_ids[0]) : json(c.eos_token_ids);
  return j;
}

}  // namespace citeforge::models
