#include "models/peft_adapter.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/file_io.h"
#include "models/model_tensors.h"
#include "models/safetensors.h"

namespace citeforge::models {
namespace fs = std::filesystem;
namespace {

const std::string kPrefix = "base_model.model.";

std::vector<std::pair<std::string, torch::Tensor>> peft_tensors(LlamaForCausalLM& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& [name, tensor] : lora_parameters(model))
    out.emplace_back(peft_tensor_name(name), tensor.detach().to(torch::kCPU));
  return out;
}

std::vector<std::string> adapted_layers(LlamaForCausalLM& model) {
  std::vector<std::string> out;
  for (auto& [name, linear] : named_linears(model))
    if (linear->has_lora()) out.push_back(name);
  return out;
}

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& file, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    fail_at(file, std::string("field '") + key + "'", "has the wrong type");
  }
}

}  // namespace

std::string peft_tensor_name(const std::string& citeforge_name) {
  return kPrefix + citeforge_name + ".weight";
}

nlohmann::json peft_adapter_config(const LoraConfig& config,
                                   const std::vector<std::string>& adapted,
                                   const std::string& base_model) {
  // peft (0.21) records the expanded target list as the adapted modules' full names, sorted.
  std::set<std::string> targets(adapted.begin(), adapted.end());
  return {{"alpha_pattern", nlohmann::json::object()},
          {"auto_mapping", nullptr},
          {"base_model_name_or_path", base_model},
          {"bias", "none"},
          {"fan_in_fan_out", false},
          {"inference_mode", true},
          {"init_lora_weights", true},
          {"layers_pattern", nullptr},
          {"layers_to_transform", nullptr},
          {"lora_alpha", config.spec.alpha},
          {"lora_dropout", config.spec.dropout},
          {"modules_to_save", nullptr},
          {"peft_type", "LORA"},
          {"r", config.spec.r},
          {"rank_pattern", nlohmann::json::object()},
          {"revision", nullptr},
          {"target_modules", std::vector<std::string>(targets.begin(), targets.end())},
          {"task_type", "CAUSAL_LM"},
          {"use_dora", false},
          {"use_rslora", false}};
}

std::vector<std::pair<std::string, std::string>> peft_adapter_files(LlamaForCausalLM& model,
                                                                    const LoraConfig& config,
                                                                    const std::string& base_model) {
  return {
      {"adapter_model.safetensors", serialize_safetensors(peft_tensors(model), {{"format", "pt"}})},
      {"adapter_config.json",
       peft_adapter_config(config, adapted_layers(model), base_model).dump(2) + "\n"}};
}

void save_peft_adapter(LlamaForCausalLM& model, const LoraConfig& config,
                       const std::string& base_model, const std::string& dir) {
  fs::create_directories(dir);
  write_safetensors((fs::path(dir) / "adapter_model.safetensors").string(), peft_tensors(model),
                    {{"format", "pt"}});
  write_file_atomically(
      (fs::path(dir) / "adapter_config.json").string(),
      peft_adapter_config(config, adapted_layers(model), base_model).dump(2) + "\n");
}

PeftAdapter load_peft_adapter(LlamaForCausalLM& model, const std::string& dir) {
  const std::string config_path = (fs::path(dir) / "adapter_config.json").string();
  if (!fs::exists(config_path)) fail_at(dir, "", "not a peft adapter (no adapter_config.json)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(config_path));
  } catch (const nlohmann::json::exception& e) {
    fail_at(config_path, "", std::string("invalid JSON: ") + e.what());
  }
  PeftAdapter adapter;
  if (field<std::string>(j, "peft_type", config_path, "LORA") != "LORA")
    fail_at(config_path, "field 'peft_type'", "only LORA adapters are supported");
  if (field<bool>(j, "use_dora", config_path, false))
    fail_at(config_path, "field 'use_dora'", "DoRA adapters are not supported");
  if (field<bool>(j, "use_rslora", config_path, false))
    fail_at(config_path, "field 'use_rslora'", "rsLoRA scaling is not supported");
  if (field<bool>(j, "fan_in_fan_out", config_path, false))
    fail_at(config_path, "field 'fan_in_fan_out'", "transposed (Conv1D) layers are not supported");
  if (field<std::string>(j, "bias", config_path, "none") != "none")
    fail_at(config_path, "field 'bias'", "adapters with biases are not supported");
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    if (j.contains(key) && !j[key].is_null() && !j[key].empty())
      fail_at(config_path, std::string("field '") + key + "'",
              "per-module ranks or alphas are not supported");
  if (j.contains("modules_to_save") && !j["modules_to_save"].is_null() &&
      !j["modules_to_save"].empty())
    fail_at(config_path, "field 'modules_to_save'",
            "fully trained extra modules are not supported");
  if (!j.contains("r")) fail_at(config_path, "field 'r'", "missing");
  adapter.config.spec.r = field<int64_t>(j, "r", config_path, 0);
  adapter.config.spec.alpha = field<double>(j, "lora_alpha", config_path, 8.0);
  adapter.config.spec.dropout = field<double>(j, "lora_dropout", config_path, 0.0);
  adapter.base_model = field<std::string>(j, "base_model_name_or_path", config_path, "");
  if (j.contains("target_modules") && j["target_modules"].is_string())
    adapter.config.target_modules = {j["target_modules"].get<std::string>()};
  else
    adapter.config.target_modules =
        field<std::vector<std::string>>(j, "target_modules", config_path, {"all-linear"});
  if (adapter.config.spec.r <= 0) fail_at(config_path, "field 'r'", "must be > 0");
  if (!std::isfinite(adapter.config.spec.alpha) || adapter.config.spec.alpha <= 0)
    fail_at(config_path, "field 'lora_alpha'", "must be a finite number > 0");
  if (!(adapter.config.spec.dropout >= 0 && adapter.config.spec.dropout < 1))
    fail_at(config_path, "field 'lora_dropout'", "must be in [0, 1)");
  if (!lora_parameters(model).empty())
    throw Error(dir + ": the model already has adapters; load an adapter onto a bare base model");

  // The tensors are checked against the config before any adapter is allocated: a rank that
  // no tensor has (an absurd r once went straight to the allocator) or a tensor of another kind
  // is one line naming the tensor.
  const std::string weights_path = (fs::path(dir) / "adapter_model.safetensors").string();
  auto weights = open_safetensors(weights_path);
  for (const auto& name : weights.names()) {
    const TensorEntry& entry = weights.tensors.at(name);
    if (entry.dtype != "F32" && entry.dtype != "F16" && entry.dtype != "BF16")
      fail_at(weights_path, "tensor '" + name + "'", "dtype " + entry.dtype + " is not a float");
    if (name.find("lora_A") != std::string::npos &&
        (entry.shape.size() != 2 || entry.shape[0] != adapter.config.spec.r))
      fail_at(weights_path, "tensor '" + name + "'",
              "shape " + shape_text(entry.shape) + " does not match r = " +
                  std::to_string(adapter.config.spec.r) + " of " + config_path);
    check_finite(weights_path, name, weights.get(name));
  }
  try {
    adapter.adapted = attach_lora(model, adapter.config);
  } catch (const Error& e) {
    fail_at(config_path, "field 'target_modules'", e.what());
  }

  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : lora_parameters(model)) {
    const std::string peft_name = peft_tensor_name(name);
    if (!weights.contains(peft_name))
      fail_at(weights_path, "tensor '" + peft_name + "'", "missing from the adapter");
    auto value = weights.get(peft_name);
    if (value.sizes() != tensor.sizes())
      fail_at(weights_path, "tensor '" + peft_name + "'",
              "shape does not match r = " + std::to_string(adapter.config.spec.r) +
                  " and the model's layer");
    tensor.copy_(value);
    used.insert(peft_name);
  }
  for (const auto& name : weights.names())
    if (!used.count(name))
      fail_at(weights_path, "tensor '" + name + "'", "unexpected (no such adapter in the model)");
  return adapter;
}

void merge_adapters(LlamaForCausalLM& model) {
  for (auto& [name, linear] : named_linears(model)) linear->merge_lora();
}

}  // namespace citeforge::models
