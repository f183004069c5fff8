#include "models/checkpoint_io.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_io.h"

namespace citeforge::models {
namespace {

std::string shape_string(torch::IntArrayRef shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Buffers HF keeps in some checkpoints that carry no learned state.
bool ignorable(const std::string& name) {
  return name.find("rotary_emb.inv_freq") != std::string::npos;
}

}  // namespace

void load_weights(LlamaForCausalLM& model, const SafetensorsCheckpoint& checkpoint) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    auto it = checkpoint.tensors.find(name);
    if (it == checkpoint.tensors.end())
      fail_at(checkpoint.location, "tensor '" + name + "'", "missing from the checkpoint");
    torch::Tensor& param = item.value();
    if (torch::IntArrayRef(it->second.shape) != param.sizes())
      fail_at(it->second.file, "tensor '" + name + "'",
              "shape " + shape_string(it->second.shape) + " does not match the config's " +
                  shape_string(param.sizes()));
    param.copy_(checkpoint.get(name));
    used.insert(name);
  }
  for (const auto& [name, entry] : checkpoint.tensors)
    if (!used.count(name) && !ignorable(name))
      fail_at(entry.file, "tensor '" + name + "'",
              model->config.tie_word_embeddings && name == "lm_head.weight"
                  ? "unexpected: the config ties the LM head to the embeddings"
                  : "unexpected tensor (not a parameter of " + model->config.architecture + ")");
}

LlamaForCausalLM load_model(const std::string& dir, torch::Dtype dtype, torch::Device device) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) fail_at(dir, "", "model directory does not exist");
  ModelConfig config = read_model_config((fs::path(dir) / "config.json").string());
  auto checkpoint = open_safetensors(dir);
  LlamaForCausalLM model(config);
  load_weights(model, checkpoint);
  model->to(device, dtype);
  model->eval();
  return model;
}

void save_model(LlamaForCausalLM& model, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (auto& item : model->named_parameters()) tensors.emplace_back(item.key(), item.value());
  write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors, {{"format", "pt"}});
  ModelConfig config = model->config;
  config.dtype = tensors.front().second.scalar_type() == torch::kBFloat16 ? "bfloat16" : "float32";
  write_file_atomically((fs::path(dir) / "config.json").string(),
                        model_config_to_json(config).dump(2) + "\n");
}

}  // namespace citeforge::models
