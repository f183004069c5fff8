// results.json (docs/design.md §5): the aggregates of every evaluation of a run, one record per
// (stage, epoch, test set), so the papers' tables can be read without the archives. It can
// always be rebuilt from the eval/<stage>-<epoch>/<test set>.h5 archives.
#pragma once

#include <string>
#include <vector>

#include "trainer/eval/eval_record.h"
#include "trainer/eval/paired.h"

namespace citeforge::trainer {

struct ResultRecord {
  std::string stage;  // "base", "sft", "ppo" or "sft+ppo"
  int epoch = 0;
  std::string test_set;
  std::string checkpoint;
  NamedAggregates metrics;  // report order
  // Paired tests on the same questions: against chance, the base model and, for corrected
  // answers, the uncorrected ones (trainer/eval/paired.h). Empty in files written before them.
  std::vector<PairedComparison> paired;
};

// The aggregates of an evaluation with its paired tests (paired_comparisons).
ResultRecord result_of(const EvalRecord& record, std::vector<PairedComparison> paired = {});

// The record of (stage, epoch, test set) in `results`, or nullptr.
const ResultRecord* find_result(const std::vector<ResultRecord>& results, const std::string& stage,
                                int epoch, const std::string& test_set);

// The aggregate of metric `name`, or nullptr.
const rewards::Aggregate* find_metric(const ResultRecord& record, const std::string& name);
// The aggregate of metric `name` of `record` (which may be null), or one of count 0 with NaN
// everywhere, which a table shows as "–".
rewards::Aggregate metric_of(const ResultRecord* record, const std::string& name);

// RUN_DIR/results.json

// JSON: a list of {stage, epoch, test_set, checkpoint, metrics: {name: {mean, count, ci_low,
// ci_high}}, paired: {against: {name: {difference, count, ci_low, ci_high, p}}}}; a NaN (empty)
// aggregate is written as null, and `paired` may be absent (files from before the paired tests).
// Reading is strict: errors name the file, the record's index and the field.
std::vector<ResultRecord> read_results(const std::string& path);
void write_results(const std::string& path, const std::vector<ResultRecord>& results);

// Replaces the record with the same (stage, epoch, test set), or appends `record`.
void upsert_result(std::vector<ResultRecord>& results, ResultRecord record);
// Reads `path` when it exists, upserts `record` and writes it back atomically.
void record_result(const std::string& path, const ResultRecord& record);

// {name: {mean, count, ci_low, ci_high}} in both directions. Errors name `file`, `where` and
// the field below `field` (e.g. "metrics.f1.mean").
nlohmann::ordered_json aggregates_to_json(const NamedAggregates& aggregates);
NamedAggregates aggregates_from_json(const nlohmann::ordered_json& object, const std::string& file,
                                     const std::string& where, const std::string& field);

// Orders records by stage (base, sft, ppo, sft+ppo), then epoch, then test set.
void sort_results(std::vector<ResultRecord>& results);

// Reads every RUN_DIR/eval/<stage>-<epoch>/<test set>.h5 and returns its aggregates with the
// paired tests against chance, the base model's archive of the same test set and, for corrected
// answers, the uncorrected archive (bootstrap with `resamples`, as the run's evaluations), sorted.
// An archive whose attributes disagree with its path, a directory that is not <stage>-<epoch>,
// or a run without any archive is citeforge::Error naming the path.
std::vector<ResultRecord> results_from_archives(
    const std::string& run_dir, int resamples = rewards::kDefaultBootstrapResamples);

}  // namespace citeforge::trainer
