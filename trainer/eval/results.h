// results.json (docs/design.md §5): the aggregates of every evaluation of a run, one record per
// (stage, epoch, test set), so the papers' tables can be read without the archives. It can
// always be rebuilt from the eval/<stage>-<epoch>/<test set>.h5 archives.
#pragma once

#include <string>
#include <vector>

#include "trainer/eval/eval_record.h"

namespace citeforge::trainer {

struct ResultRecord {
  std::string stage;  // "base", "sft", "ppo" or "sft+ppo"
  int epoch = 0;
  std::string test_set;
  std::string checkpoint;
  NamedAggregates metrics;  // report order
};

// The aggregates of an evaluation.
ResultRecord result_of(const EvalRecord& record);

// The aggregate of metric `name`, or nullptr.
const rewards::Aggregate* find_metric(const ResultRecord& record, const std::string& name);

// RUN_DIR/results.json

// JSON: a list of {stage, epoch, test_set, checkpoint, metrics: {name: {mean, count, ci_low,
// ci_high}}}; a NaN (empty) aggregate is written as null. Reading is strict: errors name the
// file, the record's index and the field.
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

// Reads every RUN_DIR/eval/<stage>-<epoch>/<test set>.h5 and returns its aggregates, sorted.
// An archive whose attributes disagree with its path, a directory that is not <stage>-<epoch>,
// or a run without any archive is citeforge::Error naming the path.
std::vector<ResultRecord> results_from_archives(const std::string& run_dir);

}  // namespace citeforge::trainer
