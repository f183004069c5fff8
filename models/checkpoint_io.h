// Loading and saving whole models in HF layout (config.json + safetensors).
#pragma once

#include <torch/torch.h>

#include <string>

#include "models/llama.h"
#include "models/safetensors.h"

namespace citeforge::models {

// Copies every parameter of `model` from `checkpoint` by HF name, converting dtype. A missing
// tensor, an unexpected extra tensor or a shape mismatch is an Error naming file and tensor.
void load_weights(LlamaForCausalLM& model, const SafetensorsCheckpoint& checkpoint);

// Reads DIR/config.json and DIR's safetensors into a new model of `dtype` on `device`.
LlamaForCausalLM load_model(const std::string& dir, torch::Dtype dtype = torch::kFloat32,
                            torch::Device device = torch::kCPU);

// Writes DIR/config.json and DIR/model.safetensors (atomically, file by file).
void save_model(LlamaForCausalLM& model, const std::string& dir);

}  // namespace citeforge::models
