#include "models/lora.h"

#include <algorithm>
#include <cmath>
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

namespace {
// peft's rule: a target names a module by its full name or by a trailing part of it
// ("q_proj", "self_attn.q_proj", "model.layers.0.self_attn.q_proj").
bool matches(const std::string& name, const std::string& target) {
  return name == target || (name.size() > target.size() &&
                            name.compare(name.size() - target.size(), target.size(), target) == 0 &&
                            name[name.size() - target.size() - 1] == '.');
}
}  // namespace

std::vector<std::string> attach_lora(LlamaForCausalLM& model, const LoraConfig& config) {
  const auto& projections = llama_linear_names();
  auto linears = named_linears(model);
  std::set<std::string> chosen;
  for (const auto& target : config.target_modules) {
    bool found = false;
    for (auto& [name, linear] : linears) {
      if (name == "lm_head") continue;  // never adapted, as in peft's "all-linear"
      const bool hit = target == "all-linear" ? std::find(projections.begin(), projections.end(),
                                                          last_component(name)) != projections.end()
                                              : matches(name, target);
      if (hit) chosen.insert(name), found = true;
    }
    if (!found) {
      std::string list;
      for (const auto& k : projections) list += (list.empty() ? "" : ", ") + k;
      throw Error("lora.target_modules: unknown module '" + target +
                  "' (it names no linear layer of the model; known: all-linear, " + list + ")");
    }
  }
  for (auto& p : model->parameters()) p.set_requires_grad(false);
  std::vector<std::string> adapted;
  for (auto& [name, linear] : linears) {
    if (!chosen.count(name)) continue;
    if (!linear->has_lora()) linear->add_lora(config.spec);
    linear->lora_A.set_requires_grad(true);
    linear->lora_B.set_requires_grad(true);
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
AdaptersDisabled::~AdaptersDisabled() {
  set_adapters_enabled(model, true);
}

void keep_reference_adapters(LlamaForCausalLM& model) {
  torch::NoGradGuard no_grad;
  for (auto& [name, linear] : named_linears(model)) {
    if (!linear->has_lora()) continue;
    linear->reference_A = linear->lora_A.detach().clone();
    linear->reference_B = linear->lora_B.detach().clone();
  }
}

void clear_reference_adapters(LlamaForCausalLM& model) {
  for (auto& [name, linear] : named_linears(model))
    linear->reference_A = linear->reference_B = torch::Tensor();
}

ReferencePolicy::ReferencePolicy(LlamaForCausalLM& m) : model(m) {
  for (auto& [name, linear] : named_linears(model)) linear->use_reference = true;
}
ReferencePolicy::~ReferencePolicy() {
  for (auto& [name, linear] : named_linears(model)) linear->use_reference = false;
}

std::vector<std::pair<std::string, torch::Tensor>> lora_parameters(LlamaForCausalLM& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (auto& [name, linear] : named_linears(model)) {
    if (!linear->has_lora()) continue;
    out.emplace_back(name + ".lora_A", linear->lora_A);
    out.emplace_back(name + ".lora_B", linear->lora_B);
  }
  return out;
}

void reset_adapters(LlamaForCausalLM& model, uint64_t seed) {
  clear_reference_adapters(model);
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& [name, linear] : named_linears(model)) {
    if (!linear->has_lora()) continue;
    torch::nn::init::kaiming_uniform_(linear->lora_A, std::sqrt(5.0));
    linear->lora_B.zero_();
  }
}

}  // namespace citeforge::models
