#include "trainer/run/run_checkpoint.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "models/peft_adapter.h"
#include "models/safetensors.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

void load_trainable(const std::string& dir, NamedTensors tensors) {
  CheckpointContents contents{{}, std::move(tensors), nullptr};
  verify_checkpoint(dir);
  auto saved = models::open_safetensors((fs::path(dir) / "trainable.safetensors").string());
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : contents.tensors) {
    if (!saved.contains(name))
      fail_at(dir + "/trainable.safetensors", "tensor '" + name + "'", "missing");
    tensor.copy_(saved.get(name));
  }
}

std::vector<std::pair<std::string, std::string>> adapter_files(RunPolicy& policy) {
  return models::peft_adapter_files(policy.model, policy.lora,
                                    fs::absolute(policy.base_model_dir).string());
}

std::string adapter_base_model(const std::string& adapter_dir) {
  const std::string path = (fs::path(adapter_dir) / "adapter_config.json").string();
  try {
    return nlohmann::json::parse(read_file(path)).value("base_model_name_or_path", std::string());
  } catch (const nlohmann::json::exception& e) {
    fail_at(path, "", std::string("invalid JSON: ") + e.what());
  }
}

std::string verified_adapter_dir(const std::string& dir) {
  if (!fs::is_directory(dir)) fail_at(dir, "", "adapter directory does not exist");
  if (fs::exists(fs::path(dir) / "checksums.json")) verify_checkpoint(dir);
  if (!fs::exists(fs::path(dir) / "adapter_model.safetensors"))
    fail_at(dir, "", "no adapter_model.safetensors (not a checkpoint with a LoRA adapter)");
  return dir;
}

}  // namespace citeforge::trainer
