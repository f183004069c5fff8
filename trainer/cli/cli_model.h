// The model a command reads answers with (fix-citations' model methods, evaluate-retriever's
// answers): --model DIR|FILE.gguf on the CPU in --dtype float32|bfloat16, with an optional
// --adapter, and its tokenizer. The base is quantised as --quantization none|nf4 says; without
// it, as the run that trained the adapter was (an adapter under RUN/checkpoints/ beside
// RUN/config.resolved.yaml), so a QLoRA checkpoint is read on the NF4 base it was trained and
// answered on rather than on its dense twin.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attribution/yes_no_judge.h"
#include "models/llama.h"
#include "models/tokenizer.h"
#include "trainer/cli/cli_args.h"
#include "trainer/config/config_choices.h"

namespace citeforge::trainer {

struct CliModel {
  models::LlamaForCausalLM model{nullptr};
  std::unique_ptr<models::Tokenizer> tokenizer;  // the model's own, or --tokenizer's
  Dtype dtype = Dtype::float32;                  // what it was loaded as
  Quantization quantization = Quantization::none;
};

// The options that give the model (--model, --adapter, --quantization, --dtype, --chat,
// --non-finite-weights), for the tables of the commands that read answers with one.
std::vector<CliOption> model_options();

// --non-finite-weights error|warn, for every command that loads or imports a model, and its
// value (`command` prefixes the error of a misspelt one).
CliOption non_finite_weights_option();
NonFiniteWeights non_finite_weights(const CliArgs& cli, const std::string& command);

// --quantization, else the model.quantization of the run the adapter sits in,
// else `fallback`. `log` says when the run's choice is taken.
Quantization base_quantization(const CliArgs& cli, const std::string& command,
                               void (*log)(const std::string&),
                               Quantization fallback = Quantization::none);

// The loaded model as a yes/no judge: its --chat format, asked --judge-template (looked up in
// --templates).
attribution::YesNoJudge cli_judge(const CliArgs& cli, const CliModel& loaded);

// What a command loads when its options leave it open: where the model runs, its dtype when the
// command's --dtype has no default, and the base's quantisation when neither --quantization nor
// the adapter's run gives one.
struct CliModelDefaults {
  torch::Device device = torch::kCPU;
  Dtype dtype = Dtype::float32;
  Quantization quantization = Quantization::none;
};

// `command` prefixes the errors; `log` prints the GGUF import's progress lines and the adapter
// it loads.
CliModel load_cli_model(const CliArgs& cli, const std::string& command,
                        void (*log)(const std::string&), const CliModelDefaults& defaults = {});

}  // namespace citeforge::trainer
