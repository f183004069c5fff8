// The PPO setting of a run: iterations of rollout (sample prompts, generate, score) and learner
// update, logged to the terminal and metrics.jsonl, checkpointed every N iterations, evaluated
// every M iterations and at the end (each evaluation is one "epoch" of the setting in
// results.json), resumable from its last checkpoint.
#pragma once

#include <string>

#include "trainer/run_context.h"

namespace citeforge::trainer {

// `stage` is "ppo" (from fresh adapters) or "sft+ppo" (from the loaded SFT adapters).
void run_ppo(RunContext& run, const std::string& stage);

}  // namespace citeforge::trainer
