// LoRA adapters over a whole model (QLoRA style): which linear layers get one, switching them
// on and off, and the adapters' parameters by name.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "models/linear.h"
#include "models/llama.h"

namespace citeforge::models {

struct LoraConfig {
  LoraSpec spec;
  // Last name component of the linear layers to adapt ("q_proj", ...); "all-linear" means every
  // projection of the decoder blocks (the LM head is never adapted, as in peft).
  std::vector<std::string> target_modules = {"all-linear"};
};

// The projection names of a Llama/Mistral block, i.e. what "all-linear" expands to.
const std::vector<std::string>& llama_linear_names();

// Adds adapters to the targeted layers and freezes every other parameter of the model. Returns
// the full names of the adapted layers. An unknown target name is an Error.
std::vector<std::string> attach_lora(LlamaForCausalLM& model, const LoraConfig& config);

// Turns every adapter of the model on or off (off = the base model, PPO's reference policy).
void set_adapters_enabled(LlamaForCausalLM& model, bool enabled);

// RAII switch: adapters off for a scope, restored afterwards.
struct AdaptersDisabled {
  explicit AdaptersDisabled(LlamaForCausalLM& model);
  ~AdaptersDisabled();
  LlamaForCausalLM& model;
};

// PPO's reference policy: the frozen base plus, when one was kept, a frozen copy of the adapter
// PPO started from. keep_reference_adapters copies every adapter's current weights as that
// reference (SFT+PPO: the KL penalty then measures the distance from the SFT policy, as in RAGE
// and TRL, not from a base that never saw a citation); clear_reference_adapters drops them
// (PPO from the base: the reference is the base itself).
void keep_reference_adapters(LlamaForCausalLM& model);
void clear_reference_adapters(LlamaForCausalLM& model);

// RAII switch to the reference policy for a scope (no dropout in the reference adapter).
struct ReferencePolicy {
  explicit ReferencePolicy(LlamaForCausalLM& model);
  ~ReferencePolicy();
  LlamaForCausalLM& model;
};

// Re-initialises every adapter (A Kaiming-uniform from `seed`, B zeros) and drops any reference
// adapter: a fresh start for a setting that does not continue from another.
void reset_adapters(LlamaForCausalLM& model, uint64_t seed);

// The adapter parameters by citeforge name ("model.layers.0.self_attn.q_proj.lora_A"), in a
// fixed order. These (plus a value head) are all that trains.
std::vector<std::pair<std::string, torch::Tensor>> lora_parameters(LlamaForCausalLM& model);

// Every (name, layer) of the model's linear layers.
std::vector<std::pair<std::string, Linear>> named_linears(LlamaForCausalLM& model);

}  // namespace citeforge::models
