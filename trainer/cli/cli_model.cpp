#include "trainer/cli/cli_model.h"

#include <filesystem>

#include "common/error.h"
#include "models/checkpoint_io.h"
#include "models/gguf_import.h"
#include "models/peft_adapter.h"
#include "trainer/run/policy.h"
#include "trainer/run/run_checkpoint.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

std::vector<CliOption> model_options() {
  return {{"model", "DIR|FILE.gguf", "the model (HF directory or GGUF file)"},
          {"adapter", "DIR", "a peft adapter or a run's checkpoint on top of it"},
          {"quantization", choice_names<Quantization>(),
           "the base's quantisation (default: the adapter's run's, else none)"},
          {"dtype", choice_names<Dtype>(), "the model's dtype", choice_name(Dtype::float32)},
          {"chat", one_of(models::chat_template_names()), "the model's chat format"},
          non_finite_weights_option()};
}

CliOption non_finite_weights_option() {
  return {"non-finite-weights", choice_names<NonFiniteWeights>(),
          "NaN or infinite weights: refuse the model, or warn and load it",
          choice_name(NonFiniteWeights::error)};
}

NonFiniteWeights non_finite_weights(const CliArgs& cli, const std::string& command) {
  return parse_choice<NonFiniteWeights>(cli.require("non-finite-weights"),
                                        command + ": --non-finite-weights");
}

Quantization base_quantization(const CliArgs& cli, const std::string& command,
                               void (*log)(const std::string&), Quantization fallback) {
  if (auto q = cli.get("quantization"))
    return parse_choice<Quantization>(*q, command + ": --quantization");
  auto adapter = cli.get("adapter");
  if (!adapter) return fallback;
  const auto run = run_of_checkpoint(*adapter);
  if (!run) return fallback;
  const Quantization quantization = read_resolved_config(*run)->model.quantization;
  if (quantization == Quantization::nf4)
    log("base quantised to NF4 as in " + run->config() +
        ", the run that trained the adapter (--quantization none reads it dense)");
  return quantization;
}

CliModel load_cli_model(const CliArgs& cli, const std::string& command,
                        void (*log)(const std::string&), const CliModelDefaults& defaults) {
  std::string model_dir = cli.require("model");
  const NonFiniteWeights non_finite = non_finite_weights(cli, command);
  const auto dtype_option = cli.get("dtype");  // the command's default, if its table has one
  const Dtype dtype =
      dtype_option ? parse_choice<Dtype>(*dtype_option, command + ": --dtype") : defaults.dtype;
  if (models::is_gguf_path(model_dir))
    model_dir = models::gguf_model_dir(
        model_dir, log, non_finite, dtype == Dtype::bfloat16 ? torch::kBFloat16 : torch::kFloat32);
  const Quantization quantization = base_quantization(cli, command, log, defaults.quantization);
  CliModel out;
  out.model = load_base(model_dir, dtype, quantization, defaults.device, non_finite);
  out.dtype = dtype;
  out.quantization = quantization;
  if (auto adapter = cli.get("adapter")) {
    auto loaded = models::load_peft_adapter(out.model, verified_adapter_dir(*adapter));
    log("adapter " + *adapter + ": r " + std::to_string(loaded.config.spec.r) + " on " +
        std::to_string(loaded.adapted.size()) + " layers");
  }
  out.model->eval();
  // A command with a --tokenizer option (generate) may name another file than the model's own.
  out.tokenizer = std::make_unique<models::Tokenizer>(
      cli.has("tokenizer") ? cli.require("tokenizer") : models::find_tokenizer(model_dir));
  return out;
}

attribution::YesNoJudge cli_judge(const CliArgs& cli, const CliModel& loaded) {
  attribution::YesNoJudge judge;
  judge.model = loaded.model;
  judge.tokenizer = loaded.tokenizer.get();
  judge.chat = models::chat_template(cli.require("chat"));
  judge.prompt =
      data::find_prompt_template(cli.require("judge-template"), cli.require("templates"));
  return judge;
}

}  // namespace citeforge::trainer
