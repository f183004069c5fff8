#include "attribution/judge_calibration.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "attribution/attributability.h"
#include "common/error.h"

namespace citeforge::attribution {

std::vector<SupportPair> support_pairs(const std::vector<data::Example>& examples,
                                       const std::string& reference, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<SupportPair> pairs;
  for (const auto& e : examples) {
    const auto it = e.references.find(reference);
    if (it == e.references.end()) continue;
    for (const auto& sentence : cited_sentences(e, it->second)) {
      if (!sentence.formatted) continue;
      SupportPair yes{e.id, sentence.text, {}, true};
      std::vector<const data::Source*> others;
      for (const auto& s : e.sources) {
        const bool cited =
            std::find(sentence.keys.begin(), sentence.keys.end(), s.key) != sentence.keys.end();
        if (cited)
          yes.cited.push_back(&s);
        else if (s.label == data::Label::irrelevant && !s.text.empty())
          others.push_back(&s);
      }
      pairs.push_back(yes);
      if (others.empty()) continue;
      std::uniform_int_distribution<std::size_t> pick(0, others.size() - 1);
      pairs.push_back({e.id, sentence.text, {others[pick(rng)]}, false});
    }
  }
  return pairs;
}

namespace {

// The accuracies at `threshold`, without the AUC (which does not depend on it).
ThresholdQuality rates(const std::vector<double>& scores, const std::vector<bool>& supported,
                       double threshold) {
  ThresholdQuality q;
  q.threshold = threshold;
  std::size_t yes_right = 0, no_right = 0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const bool says = scores[i] > threshold;
    if (supported[i]) {
      ++q.supported;
      yes_right += says;
    } else {
      ++q.unsupported;
      no_right += !says;
    }
  }
  const double yes_rate = q.supported ? double(yes_right) / double(q.supported) : 0;
  const double no_rate = q.unsupported ? double(no_right) / double(q.unsupported) : 0;
  q.balanced_accuracy = (yes_rate + no_rate) / 2;
  q.accuracy = scores.empty() ? 0 : double(yes_right + no_right) / double(scores.size());
  return q;
}

}  // namespace

ThresholdQuality threshold_quality(const std::vector<double>& scores,
                                   const std::vector<bool>& supported, double threshold) {
  ThresholdQuality q = rates(scores, supported, threshold);
  // AUC by counting, ties half: calibration sets are a few thousand pairs at most.
  double wins = 0;
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (supported[i])
      for (std::size_t j = 0; j < scores.size(); ++j)
        if (!supported[j]) wins += scores[i] > scores[j] ? 1.0 : scores[i] == scores[j] ? 0.5 : 0;
  q.auc = q.supported && q.unsupported ? wins / double(q.supported * q.unsupported) : 0;
  return q;
}

ThresholdQuality choose_threshold(const std::vector<double>& scores,
                                  const std::vector<bool>& supported) {
  const auto yes = std::count(supported.begin(), supported.end(), true);
  if (yes == 0 || yes == long(supported.size()))
    throw Error("choosing a threshold needs both supported and unsupported pairs (got " +
                std::to_string(yes) + " supported of " + std::to_string(supported.size()) + ")");
  std::vector<double> sorted = scores;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<double> candidates = {sorted.front() - 1};
  for (std::size_t i = 0; i + 1 < sorted.size(); ++i)
    candidates.push_back((sorted[i] + sorted[i + 1]) / 2);
  ThresholdQuality best;
  best.balanced_accuracy = -1;
  for (double t : candidates) {
    const auto q = rates(scores, supported, t);
    if (q.balanced_accuracy > best.balanced_accuracy) best = q;
  }
  return threshold_quality(scores, supported, best.threshold);
}

}  // namespace citeforge::attribution
