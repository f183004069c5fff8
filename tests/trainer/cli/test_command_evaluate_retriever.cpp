// `citeforge evaluate-retriever` on the shipped SynSciQA_test: BM25 over its whole corpus, the
// ranking scores against the golden sources, and with the real model the answers from gold and
// from retrieved passages compared.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "data/synsciqa.h"
#include "tests/cli_runner.h"
#include "tests/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

TEST_CASE("evaluate-retriever scores BM25 on SynSciQA_test and compares the model's answers",
          "[cli][retrieval][synsciqa][smollm2]") {
  const auto dir = testing::temp_dir("evaluate-retriever");
  const auto data = (dir / "test.jsonl").string();
  auto examples = data::import_synsciqa(
      testing::dataset_path("synsciqa/SynSciQA_test.csv"),
      testing::dataset_path("synsciqa/SynSciQA_test_with_golden_sources.csv"), nullptr);
  data::write_examples_jsonl(data, examples);
  auto r = testing::run_citeforge("evaluate-retriever --data " + data + " --k 3 --out " +
                                  (dir / "bm25").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto summary = nlohmann::json::parse(read_file((dir / "bm25/summary.json").string()));
  CHECK(summary["questions"] == examples.size());
  CHECK(summary["questions_without_gold"].get<int>() > 0);
  // Far better than picking 3 of ~1800 passages at random, far from perfect.
  CHECK(summary["recall_at_k"].get<double>() > 0.3);
  CHECK(summary["recall_at_k"].get<double>() < 0.95);

  examples.resize(2);
  data::write_examples_jsonl(data, examples);
  auto answers = testing::run_citeforge(
      "evaluate-retriever --data " + data + " --k 3 --model " +
      testing::source_path("weights/SmolLM2-135M-Instruct.Q4_1.gguf") +
      " --chat smollm2 --template evidence_named --templates " +
      testing::source_path("configs/templates") + " --max-new-tokens 16 --dtype bfloat16 --out " +
      (dir / "answers").string());
  INFO(answers.output);
  REQUIRE(answers.exit_code == 0);
  CHECK_THAT(answers.output, Contains("answers from retrieved vs gold passages (2 questions)") &&
                                 Contains("from as many random passages"));
  CHECK(file_exists((dir / "answers/answers.jsonl").string()));

  auto bad = testing::run_citeforge("evaluate-retriever --data " + data + " --k 0");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Contains("--k must be >= 1"));
}
