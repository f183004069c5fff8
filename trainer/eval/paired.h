// Paired tests of an evaluation (docs/design.md §3): on the same questions, the model's score
// against its chance reference (citing as many of the given documents at random, exact per
// question), against the base model's score, and corrected answers against the uncorrected ones
// they were made from. Intervals and p-values are rewards::paired_test's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rewards/aggregate.h"
#include "trainer/eval/eval_record.h"

namespace citeforge::trainer {

struct PairedComparison {
  std::string against;  // "chance", "base" or "uncorrected"
  std::string metric;   // "f1", "precision", ...
  rewards::PairedTest test;
};

// "chance", "base", "uncorrected": the comparisons in the order results.json and tables list them.
const std::vector<std::string>& comparison_names();

// The comparisons of `record`: each metric that has a chance column (precision, recall, F1,
// reward, both source qualities, attributability where judged) against that column; against
// `base` (the base model on the same test set) and `uncorrected` (the answers this record's
// corrected) where given, pairing examples by id. Examples only one side has are left out, so
// each test's count says how many pairs it rests on.
std::vector<PairedComparison> paired_comparisons(
    const EvalRecord& record, const EvalRecord* base, const EvalRecord* uncorrected,
    std::uint64_t seed = rewards::kDefaultBootstrapSeed,
    int resamples = rewards::kDefaultBootstrapResamples);

// The comparison of `metric` against `against`, or nullptr.
const PairedComparison* find_comparison(const std::vector<PairedComparison>& comparisons,
                                        const std::string& against, const std::string& metric);

// {against: {metric: {difference, count, ci_low, ci_high, p}}}, as results.json and summary.json
// hold them (results.cpp reads them back with the rest of a record).
nlohmann::ordered_json paired_to_json(const std::vector<PairedComparison>& comparisons);

}  // namespace citeforge::trainer
