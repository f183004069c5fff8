// The policy a run trains: its base model loaded in the run's dtype on its device (its decoder
// blocks quantised to NF4 for QLoRA) with fresh LoRA adapters attached, seeded by the run.
#pragma once

#include "trainer/run/run_context.h"

namespace citeforge::trainer {

// Sets run.model and run.lora from run.base_model_dir and the config, and says what it built.
void load_policy(RunContext& run);

}  // namespace citeforge::trainer
