// Loading and saving whole models in HF layout (config.json + safetensors).
#pragma once

#include <torch/torch.h>

#include <string>

#include "models/llama.h"
#include "models/model_tensors.h"
#include "models/safetensors.h"

namespace citeforge::models {

// Copies every parameter of `model` from `checkpoint` by HF name, converting dtype. A linear
// layer whose weight was left unallocated is quantised to NF4 straight from the checkpoint on
// `quantize_device`, one tensor at a time, so the dense model never exists whole. A missing
// tensor, an unexpected extra tensor or a shape mismatch is an Error naming file and tensor; so is
// a NaN or infinite weight unless `non_finite` says warn.
void load_weights(LlamaForCausalLM& model, const SafetensorsCheckpoint& checkpoint,
                  torch::Device quantize_device = torch::kCPU,
                  NonFiniteWeights non_finite = NonFiniteWeights::error);

struct LoadOptions {
  torch::Dtype dtype = torch::kFloat32;  // of the dense parameters
  torch::Device device = torch::kCPU;
  bool nf4 = false;  // quantise the decoder blocks' projections (QLoRA's frozen base)
  NonFiniteWeights non_finite = NonFiniteWeights::error;
};

// Reads DIR/config.json and DIR's safetensors into a new model.
LlamaForCausalLM load_model(const std::string& dir, const LoadOptions& options = {});
// What load_model checks before it allocates anything: config.json, the safetensors headers and
// every tensor the config implies, with its shape (not the values). An Error names the file.
std::pair<ModelConfig, SafetensorsCheckpoint> check_model_dir(const std::string& dir);
LlamaForCausalLM load_model(const std::string& dir, torch::Dtype dtype,
                            torch::Device device = torch::kCPU);

// True when DIR holds the weights save_model writes (model.safetensors): a model built by a run
// is saved once and read from there on resume.
bool has_model_weights(const std::string& dir);

// Writes DIR/config.json and DIR/model.safetensors (atomically, file by file). NF4 layers are
// written dequantised, in the dtype of the model's dense parameters.
void save_model(LlamaForCausalLM& model, const std::string& dir);

// The model's weights by HF name as dense tensors (NF4 layers dequantised to `dtype`).
std::vector<std::pair<std::string, torch::Tensor>> dense_weights(LlamaForCausalLM& model,
                                                                 torch::Dtype dtype);

}  // namespace citeforge::models
