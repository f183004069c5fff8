// LoRA adapters in peft's on-disk format (adapter_model.safetensors + adapter_config.json), so
// Python peft loads what citeforge trains and citeforge loads what peft trains. Tensor names:
// "base_model.model.<module>.lora_A.weight" [r, in] and "...lora_B.weight" [out, r].
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "models/llama.h"
#include "models/lora.h"

namespace citeforge::models {

// peft's tensor name for a citeforge adapter parameter ("model.layers.0.mlp.up_proj.lora_A").
std::string peft_tensor_name(const std::string& citeforge_name);

// adapter_config.json for `config`; `adapted` are the full names of the adapted layers, from
// which the target module names are derived; `base_model` is recorded for `export`.
nlohmann::json peft_adapter_config(const LoraConfig& config,
                                   const std::vector<std::string>& adapted,
                                   const std::string& base_model);

// The two files of a peft adapter as (name, bytes), ready to be written into a checkpoint.
std::vector<std::pair<std::string, std::string>> peft_adapter_files(LlamaForCausalLM& model,
                                                                    const LoraConfig& config,
                                                                    const std::string& base_model);

// Writes adapter_model.safetensors and adapter_config.json into `dir`.
void save_peft_adapter(LlamaForCausalLM& model, const LoraConfig& config,
                       const std::string& base_model, const std::string& dir);

struct PeftAdapter {
  LoraConfig config;
  std::string base_model;  // base_model_name_or_path
  std::vector<std::string> adapted;
};

// Reads `dir`'s adapter_config.json, attaches adapters of that shape to `model` (which must
// have none yet) and loads their weights. Unsupported peft features (DoRA, rsLoRA, biases,
// per-module ranks, modules_to_save), missing, extra or misshaped tensors are Errors naming
// the file and the field or tensor.
PeftAdapter load_peft_adapter(LlamaForCausalLM& model, const std::string& dir);

// Folds every enabled adapter into its (dense) base weight: W += (alpha / r) B A. The adapter
// parameters are removed afterwards, so the model is a plain dense model again. NF4 bases are
// dequantised first (the merged model is dense).
void merge_adapters(LlamaForCausalLM& model);

}  // namespace citeforge::models
