// One evaluation of one checkpoint on one test set (docs/design.md §5): the generated answers with
// their per-example metrics and the aggregates over the set. The eval stage fills one per
// (stage, epoch, test set), trainer/eval/eval_archive.h stores it in HDF5 and results.json keeps
// its aggregates; `citeforge score` uses the same scoring so its files agree with the archives.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/example.h"
#include "rewards/aggregate.h"
#include "rewards/metrics.h"

namespace citeforge::trainer {

// The stages a result can come from, in table order: "base", "sft", "ppo", "sft+ppo".
const std::vector<std::string>& stage_names();
bool is_stage(const std::string& name);
// "Base", "SFT", "PPO", "SFT+PPO": how the papers' tables name a stage.
std::string stage_title(const std::string& stage);
// A test set or metric name that can be a file name and an HDF5 link name: letters, digits and
// `_ . + - @`, not starting with a dot. Used to reject names before they reach a path.
bool is_plain_name(const std::string& name);

// "test+keyword": the test set that holds `test_set`'s answers corrected by `method`
// (eval.corrections) or re-cited by a citation baseline (eval.baselines), and back: the test set
// whose answers a corrected or baseline one re-cited, or nothing.
std::string corrected_test_set(const std::string& test_set, const std::string& method);
std::optional<std::string> uncorrected_test_set(const std::string& test_set);
// Whether `test_set` holds answers re-cited by a citation baseline ("test+cite_all").
bool is_baseline_test_set(const std::string& test_set);

// A metric's aggregate under its report name (rewards::named_values order).
using NamedAggregates = std::vector<std::pair<std::string, rewards::Aggregate>>;

struct EvalRecord {
  std::string stage;       // "base", "sft", "ppo" or "sft+ppo"
  int epoch = 0;           // 0 for the base model
  std::string test_set;    // e.g. "validation", "test_ood"
  std::string checkpoint;  // the evaluated checkpoint, e.g. "checkpoints/sft-2"
  // Parallel per-example columns.
  std::vector<std::string> ids;
  std::vector<std::string> prompts;
  std::vector<std::string> generations;
  // One column per metric, in report order, each as long as `ids`.
  std::vector<std::pair<std::string, std::vector<double>>> metrics;
  NamedAggregates aggregates;  // same names and order as `metrics`
};

struct EvalOptions {
  rewards::MetricOptions metrics;
  // When set, each example's reference answer of this name is the one the citation overlap is
  // measured against; an example without it is an error.
  std::optional<std::string> overlap_reference;
  // Names the examples' file in error messages.
  std::string data_path;
  std::uint64_t bootstrap_seed = rewards::kDefaultBootstrapSeed;
  int bootstrap_resamples = rewards::kDefaultBootstrapResamples;
};

// Scores answers[i] for examples[i] and fills ids, generations, the metric columns and their
// aggregates. Stage, epoch, test set and checkpoint are left for the caller, and so are the
// prompts (one empty string per example), which only the caller's template knows.
EvalRecord evaluate_answers(const std::vector<data::Example>& examples,
                            const std::vector<std::string>& answers,
                            const EvalOptions& options = {});

// The aggregate of `name` in `aggregates`, or nullptr.
const rewards::Aggregate* find_aggregate(const NamedAggregates& aggregates,
                                         const std::string& name);

// "gpt-35, teacher": the names of an example's reference answers, or "none".
std::string reference_names(const data::Example& example);

// A metric value for JSON: integral values print as integers, NaN (an empty aggregate) as null.
nlohmann::ordered_json json_number(double value);
// {"mean", "count", "ci_low", "ci_high"}, the layout of summary.json and results.json.
nlohmann::ordered_json aggregate_json(const rewards::Aggregate& aggregate);

}  // namespace citeforge::trainer
