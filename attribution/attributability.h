// The evidence-QA paper's answer attributability (its Eq. 2): the share of an answer's sentences
// that are entailed by the sources they cite. A sentence without a citation, or with one that
// names no source, counts as not attributable; an answer without any citation has no score
// (it is the source-quality metric's business). The paper's entailment models (two Flan-T5
// attribution checkpoints) are a judge here, pluggable: any function that scores how well the
// cited sources support a sentence, with a threshold. The default judge is the configured model
// asked yes or no (attribution/yes_no_judge.h, configs/templates/attributable.yaml), its
// threshold chosen on labelled pairs (attribution/judge_calibration.h).
#pragma once

#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "attribution/yes_no_judge.h"
#include "data/example.h"

namespace citeforge::attribution {

// How strongly `cited` support `sentence` (citations removed), higher is more; nothing when the
// judge cannot read the pair (too long for the model).
using SupportJudge = std::function<std::optional<double>(
    const std::string& sentence, const std::vector<const data::Source*>& cited)>;

// An answer's sentences with their citations taken out: what each one cites (source keys) and
// whether it is formatted (at least one citation, each naming a source). Blank sentences are
// left out. Empty when the answer has no citation at all.
struct CitedSentence {
  std::string text;
  std::vector<int> keys;
  bool formatted = false;
};
std::vector<CitedSentence> cited_sentences(const data::Example& example, const std::string& answer);

struct Attributability {
  std::optional<double> score;  // |entailed| / |sentences|; nothing without any citation
  int sentences = 0;
  int entailed = 0;
  int unformatted = 0;  // no citation, or one that names no source
  int unread = 0;       // pairs the judge could not read; counted as not entailed
};

Attributability answer_attributability(const data::Example& example, const std::string& answer,
                                       const SupportJudge& judge, double threshold);

// `judge` shown, instead of the cited sources, as many of `example`'s sources drawn at random:
// attributability's chance level, the score of citing as many sources blindly.
SupportJudge with_random_sources(const data::Example& example, const SupportJudge& judge,
                                 std::mt19937_64& rng);

// An answer's attributability and, where it applies, its chance level: the same sentences
// judged against random sources (with_random_sources; 0 when that leaves nothing to score).
struct AttributabilityWithChance {
  Attributability judged;
  std::optional<double> chance;  // set exactly when judged.score is
};
AttributabilityWithChance attributability_with_chance(const data::Example& example,
                                                      const std::string& answer,
                                                      const SupportJudge& judge, double threshold,
                                                      std::mt19937_64& rng);

// The judge of a yes/no prompt: the cited sources as the template's sources, the sentence as
// its question, scored by the log-odds of "Yes".
SupportJudge yes_no_support_judge(YesNoJudge& judge);

}  // namespace citeforge::attribution
