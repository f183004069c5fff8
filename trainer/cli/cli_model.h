// The model a command reads answers with (fix-citations' model methods, evaluate-retriever's
// answers): --model DIR|FILE.gguf on the CPU in --dtype float32|bfloat16, with an optional
// --adapter, and its tokenizer.
#pragma once

#include <memory>
#include <string>

#include "models/llama.h"
#include "models/tokenizer.h"
#include "trainer/cli/cli_args.h"

namespace citeforge::trainer {

struct CliModel {
  models::LlamaForCausalLM model{nullptr};
  std::unique_ptr<models::Tokenizer> tokenizer;
};

// `command` prefixes the errors; `log` prints the GGUF import's progress lines.
CliModel load_cli_model(const CliArgs& cli, const std::string& command,
                        void (*log)(const std::string&));

}  // namespace citeforge::trainer
