#include "models/peft_adapter.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/file_io.h"
#include "models/model_tensors.h"
#include "models/peft_adapter_config.h"
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
  const PeftAdapterSettings settings =
      parse_peft_adapter_config(read_file(config_path), config_path);
  PeftAdapter adapter;
  adapter.config.spec.r = settings.r;
  adapter.config.spec.alpha = settings.alpha;
  adapter.config.spec.dropout = settings.dropout;
  adapter.config.target_modules = settings.target_modules;
  adapter.base_model = settings.base_model;
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
