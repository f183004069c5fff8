// A run's numbers as it goes (docs/design.md §5, "Run directory"): every record goes to
// metrics.jsonl and, with logging.tensorboard on (the default), its numeric fields also go to
// TensorBoard event files, one TensorBoard run per stage under RUN/tensorboard/<stage>/, so
// `tensorboard --logdir runs/` shows a run live and beside others. The one place both are
// written, by the process that writes the run's files (rank 0).
//
// Steps: training records at their optimiser step (SFT, pre-training) or iteration (PPO);
// evaluations at their results.json epoch (an SFT epoch, the k-th PPO evaluation; the base at 0),
// as eval/<test set>/<metric> with .../ci_low and .../ci_high. A resumed stage writes a SessionLog
// START at the first step it repeats, so TensorBoard drops what the killed process wrote from
// that step on; in metrics.jsonl the last record of a (stage, step) is the one that counts.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "rewards/aggregate.h"

namespace citeforge::trainer {

struct RunLog {
  std::string run_dir;
  bool tensorboard = true;
  std::string config_yaml;  // the resolved config, the text each stage's event file opens with
};

// RUN/tensorboard/<stage>
std::string tensorboard_dir(const std::string& run_dir, const std::string& stage);

// A training record: {"stage": ..., "step" or "iteration": ..., numbers or objects of numbers}.
// Objects nest into tags with '/' (e.g. "kl/k3"); strings and booleans stay in metrics.jsonl only.
void log_record(const RunLog& log, const nlohmann::json& record);

// A stage resuming: `record` ({"stage", "event": "resume", ...}) goes to metrics.jsonl, and the
// stage's event file gets the START that hides the killed process's steps from `first_repeated`
// on.
void log_resume(const RunLog& log, const nlohmann::json& record, int64_t first_repeated);

// An evaluation's aggregates (chance references among them) as scalars of its stage's run: what
// results.json records for (stage, epoch, test set).
void log_evaluation(const RunLog& log, const std::string& stage, int epoch,
                    const std::string& test_set,
                    const std::vector<std::pair<std::string, rewards::Aggregate>>& metrics);

}  // namespace citeforge::trainer
