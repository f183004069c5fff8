#include "trainer/cli/cli_model.h"

#include "common/error.h"
#include "models/checkpoint_io.h"
#include "models/gguf_import.h"
#include "models/peft_adapter.h"
#include "trainer/run/run_checkpoint.h"

namespace citeforge::trainer {

CliModel load_cli_model(const CliArgs& cli, const std::string& command,
                        void (*log)(const std::string&)) {
  std::string model_dir = cli.require("model");
  if (models::is_gguf_path(model_dir)) model_dir = models::gguf_model_dir(model_dir, log);
  const std::string dtype = cli.get_or("dtype", "float32");
  if (dtype != "float32" && dtype != "bfloat16")
    throw Error(command + ": --dtype must be float32 or bfloat16");
  CliModel out;
  out.model = models::load_model(
      model_dir, dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32, torch::kCPU);
  if (auto adapter = cli.get("adapter"))
    models::load_peft_adapter(out.model, verified_adapter_dir(*adapter));
  out.model->eval();
  out.tokenizer = std::make_unique<models::Tokenizer>(models::find_tokenizer(model_dir));
  return out;
}

}  // namespace citeforge::trainer
