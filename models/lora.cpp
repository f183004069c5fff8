#include "models/lora.h"

#include <algorithm>
#include <set>

#include "common/error.h"

namespace citeforge::models {

const std::vector<std::string>& llama_linear_names() {
  static const std::vector<std::string> names = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                 "gate_proj", "up_proj", "down_proj"};
  return names;
}

std::vector<std::pair<std::string, Linear>> named_linears(LlamaForCausalLM& model) {
  std::vector<std::pair<std::string, Linear>> out;
  for (auto& item : model->named_modules("", /*include_self=*/false))
    if (auto linear = std::dynamic_pointer_cast<LinearImpl>(item.value()))
      out.emplace_back(item.key(), Linear(linear));
  return out;
}

namespace {
std::string last_component(const std::string& name) {
  auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}
}  // namespace

std::vector<std::string> attach_lora(LlamaForCausalLM& model, const LoraConfig& config) {
  std::set<std::string> targets;
  for (const auto& t : config.target_modules) {
    if (t == "all-linear") {
      targets.insert(llama_linear_names().begin(), llama_linear_names().end());
      continue;
    }
    const auto& known = llama_linear_names();
    if (std::find(known.begin(), known.end(), t) == known.end()) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error("lora.target_modules: unknown module '" + t + "' (known: all-linear, " + list +
                  ")");
    }
    targets.insert(t);
  }
  for (auto& p : model->parameters()) p.set_requires_grad(false);
  std::vector<std::string> adapted;
  for (auto& [name, linear] : named_linears(model)) {
    if (name == "lm_head" || !targets.count(last_component(name))) continue;
    if (!linear->has_lora()) linear->add_lora(config.spec);
    adapted.push_back(name);
  }
  return adapted;
}

void set_adapters_enabled(LlamaForCausalLM& model, bool enabled) {
  for (auto& [name, linear] : named_linears(model)) linear->adapter_enabled = enabled;
}

AdaptersDisabled::AdaptersDisabled(LlamaForCausalLM& m) : model(m) {
  set_adapters_enabled(model, false);
}
AdaptersDisabled::~AdaptersDisabled() { set_adapters_enabled(model, true); }

std::vector<std::pair<std::string, torch::Tensor>> lora_parameters(LlamaForCausalLM& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& [name, linear] : named_linears(model)) {
    if (!linear->has_lora()) continue;
    out.emplace_back(name + ".lora_A", linear->lora_A);
    out.emplace_back(name + ".lora_B", linear->lora_B);
  }
  return out;
}

}  // namespace citeforge::models
