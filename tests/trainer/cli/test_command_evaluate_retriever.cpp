// `citeforge evaluate-retriever` on the shipped SynSciQA_test: BM25 over its whole corpus, the
// ranking scores against the golden sources, and with the real model the answers from gold and
// from retrieved passages compared.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/file_io.h"
#include "data/synsciqa.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

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

  // The same corpus as passages in a file of its own, and the answers in the three scenarios.
  std::string passages;
  std::set<std::string> texts;
  for (const auto& e : examples)
    for (const auto& source : e.sources)
      if (!source.text.empty() && texts.insert(source.text).second)
        passages += nlohmann::json({{"id", e.id + "/" + std::to_string(source.key)},
                                    {"text", source.text},
                                    {"name", source.name}})
                        .dump() +
                    "\n";
  const auto corpus = (dir / "passages.jsonl").string();
  write_file_atomically(corpus, passages);
  examples.resize(2);
  data::write_examples_jsonl(data, examples);
  auto answers = testing::run_citeforge(
      "evaluate-retriever --data " + data + " --corpus " + corpus + " --k 3 --model " +
      testing::source_path("weights/SmolLM2-135M-Instruct.Q4_1.gguf") +
      " --chat smollm2 --template evidence_named --templates " +
      testing::source_path("configs/templates") +
      " --reference gpt-4 --max-new-tokens 16 --dtype bfloat16 --out " +
      (dir / "answers").string());
  INFO(answers.output);
  REQUIRE(answers.exit_code == 0);
  CHECK_THAT(answers.output, Contains("answers to 2 questions") && Contains("  gtr ") &&
                                 Contains("vs gpt-4: ROUGE-L") &&
                                 Contains("compared with the answers from the given sources"));
  CHECK(file_exists((dir / "answers/answers.jsonl").string()));
  auto with_model = nlohmann::json::parse(read_file((dir / "answers/summary.json").string()));
  CHECK(with_model["passages"] == texts.size());
  for (const char* scenario : {"given", "rtg", "gtr", "random"}) {
    INFO(scenario);
    const auto& j = with_model["answers"]["scenarios"][scenario];
    CHECK(j["f1"]["count"] == 2);
    CHECK(j["with_reference"] == 2);
    CHECK(j["rouge_l"].get<double>() >= 0);
  }
  // Each scenario's paired test against chance agrees with the per-question scores written
  // beside the answers: the difference is the mean of their per-question differences, and the
  // Holm-adjusted p is never below the raw one.
  std::vector<nlohmann::json> scores;
  std::istringstream lines(read_file((dir / "answers/scores.jsonl").string()));
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) scores.push_back(nlohmann::json::parse(line));
  REQUIRE(scores.size() == 2);
  for (const char* scenario : {"given", "rtg", "gtr", "random"})
    for (const char* metric : {"precision", "recall", "f1"}) {
      INFO(scenario << " " << metric);
      const std::string column = std::string(scenario) + "_" + metric;
      const std::string chance = std::string(scenario) + "_chance_" + metric;
      double sum = 0;
      int count = 0;
      for (const auto& q : scores)
        if (q[column].is_number() && q[chance].is_number()) {
          sum += q[column].get<double>() - q[chance].get<double>();
          ++count;
        }
      const auto& t = with_model["answers"]["scenarios"][scenario]["paired"]["chance"][metric];
      REQUIRE(t["count"] == count);
      if (count == 0) continue;
      CHECK(t["difference"].get<double>() == Approx(sum / count).margin(1e-12));
      CHECK(t["p_holm"].get<double>() >= t["p"].get<double>());
    }
  // HAGRID's citation overlap with the reference's citations, for the given sources only.
  CHECK(with_model["answers"]["scenarios"]["given"].contains("overlap_precision"));
  CHECK_FALSE(with_model["answers"]["scenarios"]["rtg"].contains("overlap_precision"));
  // Two copies of one answer agree completely by ROUGE-L and exact match; the judge is asked.
  const auto& same = with_model["answers"]["compared_with_given"]["same_answer"];
  CHECK(same["rouge_l"] == 1.0);
  CHECK(same["exact_match"] == 1.0);
  CHECK(same.contains("judge_agrees"));

  // A corpus file with a repeated id, or a passage without text field, is an error naming it.
  auto with_corpus = [&](const std::string& lines) {
    write_file_atomically(corpus, lines);
    return testing::run_citeforge("evaluate-retriever --data " + data + " --corpus " + corpus);
  };
  auto repeated =
      with_corpus("{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"a\", \"text\": \"y\"}\n");
  CHECK(repeated.exit_code != 0);
  CHECK_THAT(repeated.output, Contains("passage 2") && Contains("'a'"));
  auto misspelt =
      with_corpus("{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"txt\": \"y\"}\n");
  CHECK(misspelt.exit_code != 0);
  CHECK_THAT(misspelt.output, Contains("line 2") && Contains("'txt'"));
  // Only empty passages: nothing to retrieve from.
  auto empty = with_corpus("{\"id\": \"a\", \"text\": \"  \"}\n");
  CHECK(empty.exit_code != 0);
  CHECK_THAT(empty.output, Contains("the corpus is empty"));

  auto bad = testing::run_citeforge("evaluate-retriever --data " + data + " --k 0");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.output, Contains("--k must be >= 1"));
}
