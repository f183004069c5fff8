// Answer attributability (evidence-QA Eq. 2) with a judge whose verdicts are known, the labelled
// pairs a judge's threshold is chosen on, and the threshold choice itself.
#include <catch2/catch.hpp>

#include "attribution/attributability.h"
#include "attribution/judge_calibration.h"
#include "common/error.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {

data::Example example(data::CitationStyle style = data::CitationStyle::numeric,
                      std::string id = "q", std::string question = "What happens?") {
  data::Example e;
  e.id = std::move(id);
  e.question = std::move(question);
  e.citation_style = style;
  e.sources = {
      {1, "Crab, 2001, p. 1", "Crabs molt their shells every spring.", data::Label::relevant},
      {2, "Magma, 1999, p. 7", "Volcanoes erupt when magma pressure builds up.",
       data::Label::irrelevant},
      {3, "Fiddle, 2010, p. 3", "A violin has four strings.", data::Label::irrelevant}};
  return e;
}

// Supported when a cited source shares the sentence's first word (lower-cased): a judge whose
// every verdict the test can say in advance. Score 1 or -1; nothing for an empty source list.
std::optional<double> first_word_judge(const std::string& sentence,
                                       const std::vector<const data::Source*>& cited) {
  if (cited.empty()) return std::nullopt;
  std::string word = sentence.substr(0, sentence.find(' '));
  for (auto& c : word) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const auto* s : cited) {
    std::string text = s->text;
    for (auto& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (text.find(word) != std::string::npos) return 1.0;
  }
  return -1.0;
}

}  // namespace

TEST_CASE("attributability: entailed sentences over all sentences, for answers that cite",
          "[attribution][attributability]") {
  const auto e = example();
  // Entailed, not entailed (cites the violin for crabs), no citation, a citation of no source.
  const auto a = attribution::answer_attributability(
      e, "Crabs molt in spring [1]. Crabs play music [3]. Volcanoes erupt. Magma rises [7].",
      first_word_judge, 0.0);
  REQUIRE(a.score);
  CHECK(a.sentences == 4);
  CHECK(a.entailed == 1);
  CHECK(a.unformatted == 2);
  CHECK(*a.score == Approx(0.25));
  // Several sources in one sentence are judged together.
  CHECK(*attribution::answer_attributability(e, "Volcanoes erupt [1][2].", first_word_judge, 0)
             .score == 1.0);
  // The threshold decides: a judge's score must exceed it.
  CHECK(*attribution::answer_attributability(e, "Crabs molt [1].", first_word_judge, 1.0).score ==
        0.0);
  // No citation at all: not applicable, whatever the sentences say.
  CHECK_FALSE(attribution::answer_attributability(e, "Crabs molt.", first_word_judge, 0).score);
  CHECK_FALSE(attribution::answer_attributability(e, "", first_word_judge, 0).score);
  // A pair the judge cannot read counts against the answer and is reported.
  const attribution::SupportJudge blind = [](const std::string&,
                                             const std::vector<const data::Source*>&) {
    return std::optional<double>();
  };
  const auto unread = attribution::answer_attributability(e, "Crabs molt [1].", blind, 0);
  CHECK(unread.unread == 1);
  CHECK(*unread.score == 0.0);
  // Named citations, the sentence given to the judge without them.
  const auto named = example(data::CitationStyle::named);
  std::string seen;
  const attribution::SupportJudge recording = [&](const std::string& sentence,
                                                  const std::vector<const data::Source*>& cited) {
    seen = sentence;
    return first_word_judge(sentence, cited);
  };
  CHECK(*attribution::answer_attributability(named, "Crabs molt (Crab, 2001, p. 1).", recording, 0)
             .score == 1.0);
  CHECK(seen == "Crabs molt.");
}

TEST_CASE("labelled pairs from trusted answers, and the threshold chosen on them",
          "[attribution][attributability]") {
  auto e = example();
  e.references["teacher"] = "Crabs molt every spring [1]. Nothing else is known.";
  const auto other = example(data::CitationStyle::numeric, "r");  // no reference: skipped
  const std::vector<data::Example> examples = {e, other};
  const auto pairs = attribution::support_pairs(examples, "teacher", 3);
  // The cited sentence with its source, and with one of the irrelevant sources; the uncited
  // sentence makes no pair.
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0].supported);
  CHECK(pairs[0].sentence == "Crabs molt every spring.");
  REQUIRE(pairs[0].cited.size() == 1);
  CHECK(pairs[0].cited[0]->key == 1);
  CHECK_FALSE(pairs[1].supported);
  REQUIRE(pairs[1].cited.size() == 1);
  CHECK(pairs[1].cited[0]->label == data::Label::irrelevant);

  // Scores that separate at 0.5 but for one unsupported pair at 0.9.
  const std::vector<double> scores = {0.6, 0.8, 1.0, 0.1, 0.2, 0.9};
  const std::vector<bool> labels = {true, true, true, false, false, false};
  const auto best = attribution::choose_threshold(scores, labels);
  CHECK(best.balanced_accuracy == Approx(5.0 / 6.0));
  CHECK(best.threshold == Approx(0.4));  // the lower of the equally good ones
  CHECK(best.auc == Approx(7.0 / 9.0));
  const auto at = attribution::threshold_quality(scores, labels, 0.95);
  CHECK(at.balanced_accuracy == Approx((1.0 / 3 + 1.0) / 2));
  CHECK_THROWS_WITH(attribution::choose_threshold({0.1, 0.2}, {true, true}),
                    Contains("both supported and unsupported"));
}
