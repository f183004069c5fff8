// ROUGE-L and BLEU against rouge-score and sacrebleu on the same strings
// (tests/fixtures/text_overlap/, written by scripts/make_text_overlap_fixtures.py): 60 real
// answer pairs from SynSciQA_test and hand-made tokenizer edge cases.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "rewards/text_overlap.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using nlohmann::json;

namespace {
std::vector<json> fixture_cases() {
  std::ifstream in(testing::fixture_path("text_overlap/cases.jsonl"));
  std::vector<json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}
}  // namespace

TEST_CASE("ROUGE-L, 13a tokens and sentence BLEU equal rouge-score's and sacrebleu's",
          "[rewards][text_overlap]") {
  const auto cases = fixture_cases();
  REQUIRE(cases.size() >= 70);
  for (const auto& c : cases) {
    const std::string candidate = c["candidate"];
    const auto references = c["references"].get<std::vector<std::string>>();
    INFO(json(candidate).dump());
    const auto rouge = rewards::rouge_l(candidate, references);
    CHECK(rouge.precision == Approx(c["rouge_l"]["precision"].get<double>()).margin(1e-12));
    CHECK(rouge.recall == Approx(c["rouge_l"]["recall"].get<double>()).margin(1e-12));
    CHECK(rouge.f == Approx(c["rouge_l"]["f"].get<double>()).margin(1e-12));
    CHECK(rewards::tokenize_13a(candidate) == c["tokens_13a"].get<std::string>());
    CHECK(rewards::sentence_bleu(candidate, references) ==
          Approx(c["sentence_bleu"].get<double>()).margin(1e-9));
  }
}

TEST_CASE("corpus BLEU sums the statistics of all pairs, as sacrebleu's corpus_bleu",
          "[rewards][text_overlap]") {
  const auto cases = fixture_cases();
  const auto corpus = json::parse(read_file(testing::fixture_path("text_overlap/corpus.json")));
  const std::size_t n = corpus["real_pairs"];
  std::vector<std::string> candidates;
  std::vector<std::vector<std::string>> references;
  for (std::size_t i = 0; i < n; ++i) {
    candidates.push_back(cases[i]["candidate"]);
    references.push_back(cases[i]["references"]);
  }
  CHECK(rewards::corpus_bleu(candidates, references) ==
        Approx(corpus["corpus_bleu_real"].get<double>()).margin(1e-9));
  CHECK_THROWS(rewards::corpus_bleu(candidates, {}));
}

TEST_CASE("text overlap edge cases: no references, identical texts", "[rewards][text_overlap]") {
  CHECK(rewards::rouge_l("some words", std::vector<std::string>{}).f == 0.0);
  CHECK(rewards::rouge_l("Same words here.", "same WORDS here").f == Approx(1.0));
  CHECK(rewards::sentence_bleu("the same four words", {"the same four words"}) == Approx(100.0));
  CHECK(rewards::sentence_bleu("anything", {}) == 0.0);
}
