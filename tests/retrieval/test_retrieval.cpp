// The retrieval corpus, ranking scores and reciprocal rank fusion, with the bad input the
// attributed-retrieval evaluation must survive: repeated ids, empty passages, questions without
// a gold passage, k beyond the corpus.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "retrieval/corpus.h"
#include "retrieval/generate_then_retrieve.h"
#include "retrieval/ranking_metrics.h"
#include "retrieval/scenarios.h"
#include "rewards/metrics.h"

using namespace citeforge;
using namespace citeforge::retrieval;
using Catch::Matchers::Contains;

namespace {
data::Example example(const std::string& id, const std::string& question,
                      std::vector<std::pair<std::string, data::Label>> sources) {
  data::Example e;
  e.id = id;
  e.question = question;
  int key = 0;
  for (auto& [text, label] : sources) e.sources.push_back({++key, "", text, label});
  return e;
}
}  // namespace

TEST_CASE("a data set's corpus: one passage per text, empty sources left out, gold by text",
          "[retrieval]") {
  const auto rel = data::Label::relevant, irr = data::Label::irrelevant;
  const std::vector<data::Example> examples = {
      example(
          "a", "Why do volcanoes erupt?",
          {{"Magma pressure makes volcanoes erupt.", rel}, {"Violins have four strings.", irr}}),
      example("b", "How many strings has a violin?",
              {{"Violins have four strings.", rel}, {"  ", irr}}),
      example("c", "Who won?", {{"Crabs molt in spring.", irr}})};
  const auto corpus = corpus_from_examples(examples);
  REQUIRE(corpus.passages.size() == 3);
  CHECK(corpus.passages[1].id == "a#2");
  CHECK(corpus.duplicates_merged == 1);
  CHECK(corpus.empty_skipped == 1);
  CHECK(gold_passages(corpus, examples[1]) == std::vector<std::size_t>{1});
  CHECK(gold_passages(corpus, examples[2]).empty());
  CHECK(retrieve(corpus, "violin strings", 1) == std::vector<std::size_t>{1});
  // k beyond the corpus: what there is, never more.
  CHECK(retrieve(corpus, "volcanoes violins crabs", 50).size() == 3);
  CHECK(retrieve(corpus, "nothing matches", 5).empty());
}

TEST_CASE("given passages: a repeated id is an error naming both, empty ones are left out",
          "[retrieval]") {
  CHECK_THROWS_WITH(
      corpus_from_passages({{"p1", "one"}, {"p2", "two"}, {"p1", "three"}}, "c.jsonl"),
      Contains("c.jsonl: passage 3") && Contains("'p1'") && Contains("passage 1"));
  const auto corpus = corpus_from_passages({{"p1", "one"}, {"p2", ""}}, "c.jsonl");
  CHECK(corpus.passages.size() == 1);
  CHECK(corpus.empty_skipped == 1);
}

TEST_CASE("ranking scores at k, and a question without gold has no recall", "[retrieval]") {
  auto s = score_ranking({4, 2, 9}, {2, 7}, 2);
  CHECK(s.precision == Approx(0.5));
  CHECK(*s.recall == Approx(0.5));
  CHECK(*s.f1 == Approx(0.5));
  s = score_ranking({4, 2, 9}, {2, 7}, 10);  // k beyond the ranking
  CHECK(s.precision == Approx(1.0 / 3));
  s = score_ranking({4, 2}, {}, 2);
  CHECK_FALSE(s.recall);
  CHECK_FALSE(s.f1);
  CHECK(s.precision == 0.0);
  s = score_ranking({}, {1}, 3);  // nothing retrieved
  CHECK(s.precision == 0.0);
  CHECK(*s.recall == 0.0);
}

TEST_CASE("reciprocal rank fusion prefers what several rankings put high", "[retrieval]") {
  // 5 is second and first; 1 is first once; 3 is third and second.
  const auto fused = reciprocal_rank_fusion({{1, 5, 3}, {5, 3}});
  CHECK(fused == std::vector<std::size_t>{5, 3, 1});
  CHECK(reciprocal_rank_fusion({}).empty());
}

TEST_CASE("generate-then-retrieve cites each sentence's best passage from one fused list",
          "[retrieval]") {
  const auto rel = data::Label::relevant, irr = data::Label::irrelevant;
  const std::vector<data::Example> examples = {
      example(
          "a", "Why do volcanoes erupt?",
          {{"Magma pressure makes volcanoes erupt.", rel}, {"Violins have four strings.", irr}}),
      example("b", "What do crabs do?", {{"Crabs molt their shells in spring.", rel}})};
  const auto corpus = corpus_from_examples(examples);
  const auto g = generate_then_retrieve(
      corpus, "Volcanoes erupt under magma pressure. Crabs molt in spring! Nothing here matches.",
      2, 5);
  // The passages that matched a sentence, fused; each sentence cites its own best one.
  REQUIRE(g.passages.size() == 2);
  CHECK(
      g.answer ==
      "Volcanoes erupt under magma pressure [1]. Crabs molt in spring [2]! Nothing here matches.");
  CHECK(corpus.passages[g.passages[0]].text == "Magma pressure makes volcanoes erupt.");
  CHECK(corpus.passages[g.passages[1]].text == "Crabs molt their shells in spring.");
  CHECK(g.sentences == 3);
  CHECK(g.uncited_sentences == 1);
  // As an example to score: the fused passages are its sources, gold ones labelled relevant.
  const auto scored = with_retrieved_sources(examples[0], corpus, g.passages);
  REQUIRE(scored.sources.size() == 2);
  CHECK(scored.sources[0].label == rel);
  CHECK(scored.sources[1].label == irr);
  // An empty answer, or a corpus that matches nothing, cites nothing and never fails.
  CHECK(generate_then_retrieve(corpus, "", 3, 5).answer.empty());
  CHECK(generate_then_retrieve(corpus, "Quasars shine.", 3, 5).uncited_sentences == 1);
}

TEST_CASE("HAGRID's scenarios as examples: retrieved sources labelled against the gold ones",
          "[retrieval]") {
  const auto rel = data::Label::relevant, irr = data::Label::irrelevant;
  std::vector<data::Example> examples = {
      example(
          "a", "Why do volcanoes erupt?",
          {{"Magma pressure makes volcanoes erupt.", rel}, {"Violins have four strings.", irr}}),
      example("b", "What do crabs do?", {{"Crabs molt their shells in spring.", rel}}),
      example("c", "Who wrote it?", {{"Nobody knows who wrote the violin sonatas.", irr}})};
  examples[0].citation_style = data::CitationStyle::named;
  examples[0].sources[0].name = "Vulcan, 2001, p. 3";
  const auto corpus = corpus_from_examples(examples);

  // RTG: the top k passages for the question, in rank order, gold ones relevant; the style and
  // the sources' names are kept, and a passage without a name goes by its id.
  const auto rtg = retrieve_then_generate(corpus, examples, 2);
  REQUIRE(rtg.size() == 3);
  REQUIRE(!rtg[0].sources.empty());
  CHECK(rtg[0].sources[0].text == "Magma pressure makes volcanoes erupt.");
  CHECK(rtg[0].sources[0].name == "Vulcan, 2001, p. 3");
  CHECK(rtg[0].sources[0].label == rel);
  CHECK(rtg[0].citation_style == data::CitationStyle::named);
  for (const auto& s : rtg[0].sources) CHECK((s.label == rel || s.label == irr));
  // A question without a gold passage gets passages, all irrelevant: it cannot be recalled.
  for (const auto& s : rtg[2].sources) CHECK(s.label == irr);
  // k beyond the corpus: what matches, never more than the corpus.
  CHECK(retrieve_then_generate(corpus, examples, 50)[0].sources.size() <= corpus.passages.size());
  // A citation of the first retrieved source scores as a correct one.
  const auto m = rewards::score_answer(rtg[1], "Crabs molt in spring [1].", {});
  CHECK(m.precision == 1.0);

  // GTR: the model's own bracketed numbers are dropped before the sentences retrieve.
  CHECK(closed_book(examples[0]).sources.empty());
  const auto gtr = attribute_closed_book_answer(
      corpus, examples[1], "Crabs molt their shells [4]. Volcanoes erupt from magma [1, 2].", 2);
  // Both sentences' best passages tie in the fusion; the earlier corpus position comes first.
  CHECK(gtr.answer == "Crabs molt their shells [2]. Volcanoes erupt from magma [1].");
  REQUIRE(gtr.example.sources.size() == 2);
  CHECK(gtr.example.sources[0].label == irr);  // example a's gold passage, not b's
  CHECK(gtr.example.sources[1].label == rel);  // example b's
  CHECK(gtr.example.citation_style == data::CitationStyle::numeric);
  const auto scored = rewards::score_answer(gtr.example, gtr.answer, {});
  CHECK(scored.precision == 0.5);
  CHECK(scored.recall == 1.0);

  CHECK(parse_scenario("gtr", "x") == Scenario::gtr);
  CHECK_THROWS_WITH(parse_scenario("rag", "cfg.yaml: eval.scenarios[0]"),
                    Contains("cfg.yaml: eval.scenarios[0]") && Contains("unknown scenario 'rag'"));
}
