// The trained settings of a run (DESIGN.md §5): `sft`, `ppo` (from the base) and `sft+ppo`
// (PPO continuing from the selected SFT checkpoint), each evaluated after every epoch.
#pragma once

#include <string>

#include "trainer/run_context.h"
#include "trainer/train_checkpoint.h"

namespace citeforge::trainer {

void run_setting(RunContext& run, const std::string& setting);

// Supervised fine-tuning of fresh adapters on the configured reference answers.
void run_sft(RunContext& run);

// The policy's adapters as peft files (adapter_model.safetensors, adapter_config.json), written
// into every checkpoint so `citeforge generate --adapter` and Python peft can use it directly.
std::vector<std::pair<std::string, std::string>> adapter_files(RunContext& run);

// Loads the trainable tensors (adapters, value head) of checkpoint `dir` into the model.
void load_trainable(RunContext& run, const std::string& dir, NamedTensors tensors);

}  // namespace citeforge::trainer
