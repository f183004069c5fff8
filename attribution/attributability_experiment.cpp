#include "attribution/attributability_experiment.h"

#include <algorithm>
#include <map>
#include <random>

#include "common/error.h"

namespace citeforge::attribution {

JudgeCalibration calibrate_judge(const SupportJudge& support,
                                 const std::vector<data::Example>& examples,
                                 const std::string& source, const std::string& reference,
                                 uint64_t seed, const ProgressFn& progress) {
  const auto pairs = support_pairs(examples, reference, seed);
  if (pairs.empty())
    fail_at(source, "",
            "no cited sentence in any reference answer '" + reference + "' to calibrate on");
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < examples.size(); ++i) position[examples[i].id] = i;
  std::vector<double> fit_scores, check_scores;
  std::vector<bool> fit_labels, check_labels;
  JudgeCalibration out;
  out.pairs = pairs.size();
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto score = support(pairs[i].sentence, pairs[i].cited);
    if (progress) progress(i + 1, pairs.size());
    if (!score) {
      ++out.unread;
      continue;
    }
    const bool fit = position[pairs[i].example_id] % 2 == 0;
    (fit ? fit_scores : check_scores).push_back(*score);
    (fit ? fit_labels : check_labels).push_back(pairs[i].supported);
  }
  out.chosen = choose_threshold(fit_scores, fit_labels);
  out.held_out = threshold_quality(check_scores, check_labels, out.chosen.threshold);
  return out;
}

JudgedAnswers judge_answers(const std::vector<data::Example>& examples,
                            const std::vector<std::string>& answers, const SupportJudge& support,
                            double threshold, uint64_t seed, std::size_t limit,
                            const ProgressFn& progress) {
  std::mt19937_64 rng(seed);
  JudgedAnswers out;
  limit = std::min(limit, examples.size());
  for (std::size_t i = 0; i < limit; ++i) {
    const auto& e = examples[i];
    const auto judged = attributability_with_chance(e, answers[i], support, threshold, rng);
    const auto& a = judged.judged;
    out.answers.push_back({e.id, a, judged.chance});
    if (a.score) {
      out.scores.push_back(*a.score);
      out.chance.push_back(*judged.chance);
      out.sentences += a.sentences;
      out.entailed += a.entailed;
      out.unformatted += a.unformatted;
      out.unread += a.unread;
    } else {
      ++out.without_citation;
    }
    if (progress) progress(i + 1, limit);
  }
  return out;
}

}  // namespace citeforge::attribution
