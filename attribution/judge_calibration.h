// Choosing a judge's threshold on labelled data (the attributability judge's, attribution/
// attributability.h): sentence-source pairs known to be supported or not, the threshold that
// separates their scores best, and how well it does on pairs it was not chosen on.
//
// Labelled pairs come from reference answers whose citations are trusted (SynSciQA++'s answers
// passed the evidence-QA paper's attributability filter): each cited sentence with its own
// sources is a supported pair; the same sentence with a source of the question that is labelled
// irrelevant and that it does not cite is an unsupported one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/example.h"

namespace citeforge::attribution {

struct SupportPair {
  std::string example_id;
  std::string sentence;
  std::vector<const data::Source*> cited;  // into the examples the pairs were made from
  bool supported = false;
};

// The pairs of each example's reference answer `reference` (examples without it are skipped);
// the unsupported source is drawn with `seed`.
std::vector<SupportPair> support_pairs(const std::vector<data::Example>& examples,
                                       const std::string& reference, uint64_t seed);

struct ThresholdQuality {
  double threshold = 0;
  double balanced_accuracy = 0;  // mean of the accuracies on supported and unsupported pairs
  double accuracy = 0;
  double auc = 0;  // probability that a supported pair outscores an unsupported one
  std::size_t supported = 0, unsupported = 0;
};

// `threshold`'s quality on scored pairs (score > threshold says supported).
ThresholdQuality threshold_quality(const std::vector<double>& scores,
                                   const std::vector<bool>& supported, double threshold);

// The threshold with the best balanced accuracy on the pairs, midway between two adjacent
// scores (ties: the lower). Needs both kinds of pair; otherwise an Error.
ThresholdQuality choose_threshold(const std::vector<double>& scores,
                                  const std::vector<bool>& supported);

}  // namespace citeforge::attribution
