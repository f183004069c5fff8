#include "models/checkpoint_io.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_io.h"
#include "models/model_tensors.h"

namespace citeforge::models {
namespace {

// Buffers HF keeps in some checkpoints that carry no learned state.
bool ignorable(const std::string& name) {
  return name.find("rotary_emb.inv_freq") != std::string::npos;
}

}  // namespace

namespace {

bool is_adapter(const std::string& name) {
  return name.size() > 7 && (name.compare(name.size() - 7, 7, ".lora_A") == 0 ||
                             name.compare(name.size() - 7, 7, ".lora_B") == 0);
}

const TensorEntry& entry_of(const SafetensorsCheckpoint& checkpoint, const std::string& name,
                            torch::IntArrayRef expected_shape) {
  auto it = checkpoint.tensors.find(name);
  if (it == checkpoint.tensors.end())
    fail_at(checkpoint.location, "tensor '" + name + "'", "missing from the checkpoint");
  if (torch::IntArrayRef(it->second.shape) != expected_shape)
    fail_at(it->second.file, "tensor '" + name + "'",
            "shape " + shape_text(it->second.shape) + " does not match the config's " +
                shape_text(expected_shape));
  return it->second;
}

}  // namespace

void load_weights(LlamaForCausalLM& model, const SafetensorsCheckpoint& checkpoint,
                  torch::Device quantize_device, NonFiniteWeights non_finite) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    if (is_adapter(name)) continue;
    const auto& entry = entry_of(checkpoint, name, item.value().sizes());
    const auto stored = checkpoint.get(name);
    check_finite(entry.file, name, stored, non_finite);
    item.value().copy_(stored);
    used.insert(name);
  }
  for (auto& item : model->named_modules("", /*include_self=*/false)) {
    auto linear = std::dynamic_pointer_cast<LinearImpl>(item.value());
    if (!linear || linear->weight.defined() || linear->is_nf4()) continue;
    const std::string name = item.key() + ".weight";
    const auto& entry = entry_of(checkpoint, name, {linear->out_features, linear->in_features});
    const auto stored = checkpoint.get(name);
    check_finite(entry.file, name, stored, non_finite);
    linear->set_nf4(nf4_quantize(stored.to(quantize_device, torch::kFloat32)));
    used.insert(name);
  }
  for (const auto& [name, entry] : checkpoint.tensors)
    if (!used.count(name) && !ignorable(name))
      fail_at(entry.file, "tensor '" + name + "'", unexpected_tensor_reason(model->config, name));
}

std::pair<ModelConfig, SafetensorsCheckpoint> check_model_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) fail_at(dir, "", "model directory does not exist");
  ModelConfig config = read_model_config((fs::path(dir) / "config.json").string());
  auto checkpoint = open_safetensors(dir);
  // The whole checkpoint against the config before anything is allocated.
  std::map<std::string, std::vector<int64_t>> present;
  for (const auto& [name, entry] : checkpoint.tensors) present[name] = entry.shape;
  check_model_tensors(config, present, checkpoint.location, ignorable);
  return {std::move(config), std::move(checkpoint)};
}

LlamaForCausalLM load_model(const std::string& dir, const LoadOptions& options) {
  auto [config, checkpoint] = check_model_dir(dir);
  LlamaForCausalLM model(config, /*allocate_block_linears=*/!options.nf4);
  load_weights(model, checkpoint, options.device, options.non_finite);
  model->to(options.device, options.dtype);
  model->eval();
  return model;
}

LlamaForCausalLM load_model(const std::string& dir, torch::Dtype dtype, torch::Device device) {
  LoadOptions options;
  options.dtype = dtype;
  options.device = device;
  return load_model(dir, options);
}

std::vector<std::pair<std::string, torch::Tensor>> dense_weights(LlamaForCausalLM& model,
                                                                 torch::Dtype dtype) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (auto& item : model->named_parameters())
    if (!is_adapter(item.key())) tensors.emplace_back(item.key(), item.value().detach());
  for (auto& item : model->named_modules("", /*include_self=*/false)) {
    auto linear = std::dynamic_pointer_cast<LinearImpl>(item.value());
    if (linear && linear->is_nf4())
      tensors.emplace_back(item.key() + ".weight", linear->base_weight(dtype));
  }
  return tensors;
}

namespace {
std::string weights_file(const std::string& dir) {
  return (std::filesystem::path(dir) / "model.safetensors").string();
}
}  // namespace

bool has_model_weights(const std::string& dir) {
  return std::filesystem::exists(weights_file(dir));
}

void save_model(LlamaForCausalLM& model, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const auto dtype = model->model->embed_tokens->weight.scalar_type();
  auto tensors = dense_weights(model, dtype);
  write_safetensors(weights_file(dir), tensors, {{"format", "pt"}});
  ModelConfig config = model->config;
  config.dtype = dtype == torch::kBFloat16 ? "bfloat16" : "float32";
  write_file_atomically((fs::path(dir) / "config.json").string(),
                        model_config_to_json(config).dump(2) + "\n");
}

}  // namespace citeforge::models
