// The judge-attributability experiment as functions: the threshold chosen on the even-numbered
// examples' pairs and checked on the odd-numbered ones, and answers judged beside their chance
// level, with a judge whose every verdict the test knows.
#include <catch2/catch.hpp>

#include "attribution/attributability_experiment.h"
#include "common/error.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {

data::Example crab_example(const std::string& id) {
  data::Example e;
  e.id = id;
  e.question = "What do crabs do?";
  e.citation_style = data::CitationStyle::numeric;
  e.sources = {
      {1, "Crab, 2001, p. 1", "Crabs molt their shells every spring.", data::Label::relevant},
      {2, "Magma, 1999, p. 7", "Volcanoes erupt when magma pressure builds up.",
       data::Label::irrelevant}};
  e.references["teacher"] = "Crabs molt every spring [1].";
  return e;
}

// 1 when a cited source mentions crabs and the sentence does too, else -1.
std::optional<double> crab_judge(const std::string& sentence,
                                 const std::vector<const data::Source*>& cited) {
  if (cited.empty()) return std::nullopt;
  for (const auto* s : cited)
    if (s->text.find("Crabs") != std::string::npos && sentence.find("Crabs") != std::string::npos)
      return 1.0;
  return -1.0;
}

}  // namespace

TEST_CASE("judge-attributability's experiment: calibration on even examples, checked on odd",
          "[attribution][attributability]") {
  const std::vector<data::Example> examples = {crab_example("a"), crab_example("b"),
                                               crab_example("c"), crab_example("d")};
  std::size_t reports = 0, last_total = 0;
  const auto calibration = attribution::calibrate_judge(
      crab_judge, examples, "pairs.jsonl", "teacher", 5, [&](std::size_t done, std::size_t total) {
        ++reports;
        CHECK(done == reports);
        last_total = total;
      });
  // Each example gives a supported and an unsupported pair: 8, half of them chosen on.
  CHECK(calibration.pairs == 8);
  CHECK(reports == 8);
  CHECK(last_total == 8);
  CHECK(calibration.unread == 0);
  CHECK(calibration.chosen.supported == 2);
  CHECK(calibration.chosen.unsupported == 2);
  CHECK(calibration.chosen.balanced_accuracy == Approx(1.0));
  CHECK(calibration.held_out.supported == 2);
  CHECK(calibration.held_out.balanced_accuracy == Approx(1.0));
  CHECK(calibration.chosen.threshold > -1.0);
  CHECK(calibration.chosen.threshold < 1.0);

  auto without_reference = examples;
  for (auto& e : without_reference) e.references.clear();
  CHECK_THROWS_WITH(
      attribution::calibrate_judge(crab_judge, without_reference, "pairs.jsonl", "teacher", 5),
      Contains("pairs.jsonl") && Contains("no cited sentence"));
}

TEST_CASE("judge-attributability's experiment: answers judged with their chance level",
          "[attribution][attributability]") {
  const std::vector<data::Example> examples = {crab_example("a"), crab_example("b"),
                                               crab_example("c")};
  const std::vector<std::string> answers = {"Crabs molt every spring [1].",
                                            "Crabs molt every spring [2].", "Crabs molt."};
  const auto judged = attribution::judge_answers(examples, answers, crab_judge, 0.0, 9, 3);
  REQUIRE(judged.answers.size() == 3);
  CHECK(judged.answers[0].id == "a");
  CHECK(*judged.answers[0].judged.score == Approx(1.0));
  CHECK(*judged.answers[1].judged.score == Approx(0.0));
  CHECK_FALSE(judged.answers[2].judged.score);  // cites nothing
  CHECK(judged.without_citation == 1);
  CHECK(judged.scores == std::vector<double>{1.0, 0.0});
  REQUIRE(judged.chance.size() == 2);
  for (double c : judged.chance) CHECK((c == 0.0 || c == 1.0));  // one source drawn of two
  CHECK(judged.sentences == 2);
  CHECK(judged.entailed == 1);

  // A limit judges the first answers only.
  CHECK(attribution::judge_answers(examples, answers, crab_judge, 0.0, 9, 1).answers.size() == 1);
}
