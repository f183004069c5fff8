// The experiment behind `citeforge judge-attributability` (the evidence-QA paper's answer
// attributability, attribution/attributability.h): a judge's threshold chosen on labelled pairs
// and checked on pairs it was not chosen on (attribution/judge_calibration.h), then a set of
// answers judged beside their chance level. Structs out; the command prints and writes them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attribution/attributability.h"
#include "attribution/judge_calibration.h"
#include "data/example.h"

namespace citeforge::attribution {

// Called after each judged item with how many are done of how many.
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

struct JudgeCalibration {
  ThresholdQuality chosen;    // on the pairs of the even-numbered examples
  ThresholdQuality held_out;  // the chosen threshold on the odd-numbered examples' pairs
  std::size_t pairs = 0;
  int unread = 0;  // pairs the judge could not read (left out of both halves)
};

// Chooses the judge's threshold on the support pairs of `examples`' reference answers named
// `reference` (their unsupported sources drawn with `seed`). `source` names the examples' file
// in the error when no answer has a cited sentence.
JudgeCalibration calibrate_judge(const SupportJudge& support,
                                 const std::vector<data::Example>& examples,
                                 const std::string& source, const std::string& reference,
                                 uint64_t seed, const ProgressFn& progress = {});

struct JudgedAnswer {
  std::string id;
  Attributability judged;        // judged.score unset: the answer cites nothing
  std::optional<double> chance;  // the same sentences citing sources drawn at random
};

struct JudgedAnswers {
  std::vector<JudgedAnswer> answers;
  std::vector<double> scores, chance;  // of the answers with a citation, in order
  int sentences = 0, entailed = 0, unformatted = 0, unread = 0, without_citation = 0;
};

// Judges the first `limit` answers (answers[i] answers examples[i]); the chance draws use `seed`.
JudgedAnswers judge_answers(const std::vector<data::Example>& examples,
                            const std::vector<std::string>& answers, const SupportJudge& support,
                            double threshold, uint64_t seed, std::size_t limit,
                            const ProgressFn& progress = {});

}  // namespace citeforge::attribution
