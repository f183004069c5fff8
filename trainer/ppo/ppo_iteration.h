// What one PPO iteration of a setting draws and records (the loop is ppo_stage.cpp): the
// prompts and their seeds, the value head, the checkpointed tensors and their names, the
// iterations that evaluate, the logged metrics.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/example.h"
#include "models/value_head.h"
#include "trainer/ppo/ppo_learner.h"
#include "trainer/ppo/ppo_rollout.h"
#include "trainer/run/run_context.h"
#include "trainer/run/train_checkpoint.h"

namespace citeforge::trainer {

// The examples PPO samples prompts from (the training set cut to ppo.max_examples).
std::vector<data::Example> ppo_pool(const RunConfig& config, const RunData& run_data);

// The prompts of iteration `it` (1-based), drawn from a generator seeded by (seed, stage, it).
std::vector<data::Example> ppo_prompt_batch(const RunConfig& config, const std::string& stage,
                                            const std::vector<data::Example>& pool, int64_t it);

// Sampling options of iteration `it` for the whole batch (first_row 0).
RolloutOptions ppo_rollout_options(const RunConfig& config, const std::string& stage, int64_t it);

// The seed that orders iteration `it`'s minibatches.
uint64_t ppo_shuffle_seed(const RunConfig& config, const std::string& stage, int64_t it);

// The evaluation ("epoch" k of the setting in results.json) that follows iteration `it`, or 0.
int ppo_eval_index(const PpoSection& c, int64_t it);

// The name of the checkpoint behind evaluation k of a setting, "<stage>-<k>", under checkpoints/.
std::string ppo_checkpoint_name(const std::string& stage, int k);

// What follows iteration `it`: the rolling "<stage>-last" checkpoint when one is due, and at an
// evaluation the numbered checkpoint and the evaluation of every test set. `save` writes the
// checkpoint of iteration `it` into a directory.
void ppo_checkpoint_and_evaluate(RunContext& run, const std::string& stage, int64_t it,
                                 const std::function<void(const std::string&, int64_t)>& save);

// A fresh value head for `stage` (seeded, on the run's device).
models::ValueHead make_ppo_value_head(const RunSetup& setup, const RunPolicy& policy,
                                      const std::string& stage);

// What a PPO checkpoint holds and what distributed PPO broadcasts: the LoRA parameters, then the
// value head's as "v_head.<name>".
NamedTensors ppo_trainable(RunPolicy& policy, models::ValueHead& value_head);

// The metrics.jsonl record of an iteration, and the status line the terminal shows for it.
nlohmann::json ppo_metrics_record(const std::string& stage, int64_t it, const PpoStats& s,
                                  double rollout_s);
std::string ppo_status_line(const PpoStats& s, double rollout_s);

}  // namespace citeforge::trainer
