// `citeforge fix-citations` on the shipped SynSciQA_test with its GPT-3.5 reference answers:
// the corrected answers are written in the --answers format, `score` reads them back, and the
// correction touches nothing but the citations and keeps how many each answer makes.
#include <catch2/catch.hpp>

#include "attribution/citefix.h"
#include "common/file_io.h"
#include "data/answers.h"
#include "data/citations.h"
#include "data/synsciqa.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

TEST_CASE("fix-citations reads the real model for its model methods",
          "[cli][citefix][synsciqa][smollm2]") {
  const auto dir = testing::temp_dir("fix-citations-model");
  const auto data = (dir / "test.jsonl").string();
  auto examples = data::import_synsciqa(
      testing::dataset_path("synsciqa/SynSciQA_test.csv"),
      testing::dataset_path("synsciqa/SynSciQA_test_with_golden_sources.csv"), nullptr);
  examples.resize(2);
  data::write_examples_jsonl(data, examples);
  const auto fixed_path = (dir / "fixed.jsonl").string();
  auto r = testing::run_citeforge(
      "fix-citations --data " + data + " --reference gpt-35 --method bertscore --model " +
      testing::source_path("weights/SmolLM2-135M-Instruct.Q4_1.gguf") +
      " --chat smollm2 --template evidence_named --templates " +
      testing::source_path("configs/templates") + " --dtype bfloat16 --out " + fixed_path);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("fix-citations (bertscore): 2 answers") && Contains("0 skipped"));
  const auto fixed = data::read_answers_jsonl(fixed_path);
  CHECK(fixed.size() == 2);
}

TEST_CASE("fix-citations corrects real answers' citations and score reads them back",
          "[cli][citefix][synsciqa]") {
  const auto dir = testing::temp_dir("fix-citations");
  const auto data = (dir / "test.jsonl").string();
  auto examples = data::import_synsciqa(
      testing::dataset_path("synsciqa/SynSciQA_test.csv"),
      testing::dataset_path("synsciqa/SynSciQA_test_with_golden_sources.csv"), nullptr);
  data::write_examples_jsonl(data, examples);
  for (const std::string method : {"keyword", "keyword_bm25"}) {
    INFO(method);
    const auto fixed_path = (dir / ("fixed_" + method + ".jsonl")).string();
    auto r =
        testing::run_citeforge("fix-citations --data " + data + " --reference gpt-35 --method " +
                               method + " --out " + fixed_path);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Contains("re-cited") && Contains("ms per answer"));
    const auto fixed = data::read_answers_jsonl(fixed_path);
    REQUIRE(fixed.size() == examples.size());
    int changed = 0;
    for (const auto& e : examples) {
      const auto& original = e.references.at("gpt-35");
      const auto& corrected = fixed.at(e.id);
      changed += corrected != original;
      const auto before = data::parse_citations(original, e.sources, e.citation_style);
      const auto after = data::parse_citations(corrected, e.sources, e.citation_style);
      INFO(e.id << "\n" << original << "\n" << corrected);
      // Only citations change: the words are the same once citations are stripped.
      CHECK(data::strip_citations(corrected, after) == data::strip_citations(original, before));
      // The same factual points, each citing valid sources only, never more than it did.
      const auto points_before = attribution::factual_points(original, before);
      const auto points_after = attribution::factual_points(corrected, after);
      REQUIRE(points_after.size() == points_before.size());
      for (std::size_t i = 0; i < points_after.size(); ++i) {
        if (points_before[i].citations == 0) continue;
        CHECK(points_after[i].citations <= points_before[i].citations);
      }
    }
    CHECK(changed > 0);
    auto scored = testing::run_citeforge("score --data " + data + " --answers " + fixed_path);
    INFO(scored.output);
    CHECK(scored.exit_code == 0);
    CHECK_THAT(scored.output, Contains("precision"));
  }
  // Bad input: one line naming the problem.
  auto bad = testing::run_citeforge("fix-citations --data " + data +
                                    " --reference gpt-35 --method bm42 --out x.jsonl");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Contains("--method") && Contains("keyword, keyword_bm25"));
  auto no_model = testing::run_citeforge("fix-citations --data " + data +
                                         " --reference gpt-35 --method attention --out x.jsonl");
  CHECK(no_model.exit_code != 0);
  CHECK_THAT(no_model.output,
             Contains("--method attention reads the model") && Contains("--model"));
  auto model_for_keyword = testing::run_citeforge(
      "fix-citations --data " + data + " --reference gpt-35 --out x.jsonl --chat smollm2");
  CHECK(model_for_keyword.exit_code != 0);
  CHECK_THAT(model_for_keyword.output, Contains("--chat is for the model methods"));
  auto no_ref =
      testing::run_citeforge("fix-citations --data " + data + " --reference nope --out x.jsonl");
  CHECK(no_ref.exit_code != 0);
  CHECK_THAT(no_ref.output, Contains("no reference answer 'nope'"));
}
