// `citeforge run CONFIG`: the recipe of a run, the whole pipeline of a config (docs/design.md §5).
// Data (generated for the synthetic world), tokenizer and base model (trained for a built model),
// evaluation of the base, then every configured setting (sft, ppo, sft+ppo) with an evaluation
// after each epoch, checkpoint selection, and the papers' tables. Every stage checks what the run
// directory already holds, so an interrupted run continues where it stopped.
#pragma once

#include <string>

#include "trainer/config/run_config.h"

namespace citeforge::trainer {

struct DistRun;  // trainer/distributed/dist_run.h

// Runs `config` into `run_dir` (created if missing). Returns the process exit code. `dist` is
// set when this process is one rank of several (trainer/distributed/dist_run.h).
int run_recipe(const RunConfig& config, const std::string& run_dir, DistRun* dist = nullptr);

}  // namespace citeforge::trainer
