// The SFT setting: fresh adapters trained on the configured reference answers (the prompt
// masked, the loss on the answer), evaluated after every epoch.
#pragma once

#include "trainer/run/run_context.h"
#include "trainer/sft/lm_trainer.h"

namespace citeforge::trainer {

void run_sft(RunContext& run);

// A training job of `stage` as the run sets one up: its device, seed, padding, checkpoints,
// metrics and resume rule; the caller adds the data, the model and what trains.
LmTrainingJob run_training_job(const RunContext& run, const std::string& stage,
                               const TrainSection& config);

}  // namespace citeforge::trainer
