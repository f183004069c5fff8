// Checkpoint selection (docs/design.md §5, evidence-QA §5.2): for each trained setting (sft, ppo,
// sft+ppo) the epoch whose checkpoint scores best on the configured validation test set by the
// configured metric (higher is better; ties go to the earliest epoch). The base model has only
// epoch 0 and is reported alongside, so every row of the papers' tables comes from here.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainer/eval/results.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {

struct SelectionOptions {
  std::string metric = "f1";
  std::string validation = "validation";  // the test set the metric is read on
};

struct Selection {
  std::string setting;  // "base", "sft", "ppo" or "sft+ppo"
  int epoch = 0;
  std::string checkpoint;
  std::string metric;
  std::string test_set;  // the validation test set
  double value = 0;      // the metric's mean there
  // The selected checkpoint's aggregates on every test set it was evaluated on (the validation
  // set included), in test-set order.
  std::vector<std::pair<std::string, NamedAggregates>> scores;
};

// The selected checkpoint of `setting` among `results`, or nullopt when the run has no result of
// that setting at all. A setting evaluated but never on the validation set, or a metric absent
// from its results, is citeforge::Error naming the setting, test set and metric (`file` names
// where the results came from).
std::optional<Selection> select_checkpoint(const std::vector<ResultRecord>& results,
                                           const std::string& setting,
                                           const SelectionOptions& options,
                                           const std::string& file = RunDir::kResults);

// One selection per setting present in `results`, in stage order (base first).
std::vector<Selection> select_checkpoints(const std::vector<ResultRecord>& results,
                                          const SelectionOptions& options,
                                          const std::string& file = RunDir::kResults);

// RUN_DIR/selection.json

// JSON: {"metric", "validation", "selected": [{setting, epoch, checkpoint, metric, test_set,
// value, scores: {test set: {metric: {mean, count, ci_low, ci_high}}}}]}.
void write_selection(const std::string& path, const SelectionOptions& options,
                     const std::vector<Selection>& selections);
// Reads it back; errors name the file, the entry and the field.
std::vector<Selection> read_selection(const std::string& path, SelectionOptions* options = nullptr);

}  // namespace citeforge::trainer
