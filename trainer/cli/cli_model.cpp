#include "trainer/cli/cli_model.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "common/error.h"
#include "models/checkpoint_io.h"
#include "models/gguf_import.h"
#include "models/peft_adapter.h"
#include "trainer/run/run_checkpoint.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

std::string base_quantization(const CliArgs& cli, const std::string& command,
                              void (*log)(const std::string&)) {
  if (auto q = cli.get("quantization")) {
    if (*q != "none" && *q != "nf4")
      throw Error(command + ": --quantization must be none or nf4, not '" + *q + "'");
    return *q;
  }
  auto adapter = cli.get("adapter");
  if (!adapter) return "none";
  fs::path dir = fs::path(*adapter).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "checkpoints/sft-1/"
  const fs::path config = dir.parent_path().parent_path() / "config.resolved.yaml";
  if (dir.parent_path().filename() != "checkpoints" || !fs::exists(config)) return "none";
  std::string quantization = "none";
  try {
    YAML::Node model = YAML::LoadFile(config.string())["model"];
    if (model && model["quantization"]) quantization = model["quantization"].as<std::string>();
  } catch (const YAML::Exception& e) {
    fail_at(config.string(), "model.quantization", std::string("cannot be read: ") + e.what());
  }
  if (quantization != "none" && quantization != "nf4")
    fail_at(config.string(), "model.quantization", "'" + quantization + "' is not none or nf4");
  if (quantization == "nf4")
    log("base quantised to NF4 as in " + config.string() +
        ", the run that trained the adapter (--quantization none reads it dense)");
  return quantization;
}

CliModel load_cli_model(const CliArgs& cli, const std::string& command,
                        void (*log)(const std::string&)) {
  std::string model_dir = cli.require("model");
  if (models::is_gguf_path(model_dir)) model_dir = models::gguf_model_dir(model_dir, log);
  const std::string dtype = cli.get_or("dtype", "float32");
  if (dtype != "float32" && dtype != "bfloat16")
    throw Error(command + ": --dtype must be float32 or bfloat16");
  models::LoadOptions load;
  load.dtype = dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32;
  load.nf4 = base_quantization(cli, command, log) == "nf4";
  CliModel out;
  out.model = models::load_model(model_dir, load);
  if (auto adapter = cli.get("adapter"))
    models::load_peft_adapter(out.model, verified_adapter_dir(*adapter));
  out.model->eval();
  out.tokenizer = std::make_unique<models::Tokenizer>(models::find_tokenizer(model_dir));
  return out;
}

}  // namespace citeforge::trainer
