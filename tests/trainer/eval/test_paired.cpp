// Paired tests of an evaluation against chance, the base model and the uncorrected answers, on
// hand-made cases whose differences and sign-flip p-values are counted by hand in the comments.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"
#include "tests/support/test_paths.h"
#include "trainer/eval/eval_archive.h"
#include "trainer/eval/paired.h"
#include "trainer/eval/results.h"
#include "trainer/run/run_dir.h"

using namespace citeforge;
using namespace citeforge::trainer;
using Catch::Matchers::Contains;

namespace {

EvalRecord record(const std::string& stage, int epoch, const std::string& test_set,
                  std::vector<std::string> ids,
                  std::vector<std::pair<std::string, std::vector<double>>> metrics) {
  EvalRecord r;
  r.stage = stage;
  r.epoch = epoch;
  r.test_set = test_set;
  r.checkpoint =
      stage == "base" ? "base_model" : "checkpoints/" + stage + "-" + std::to_string(epoch);
  r.prompts.assign(ids.size(), "");
  r.generations.assign(ids.size(), "an answer [1].");
  r.ids = std::move(ids);
  r.metrics = std::move(metrics);
  for (const auto& [name, column] : r.metrics)
    r.aggregates.push_back({name, rewards::aggregate(column)});
  return r;
}

// The model: F1 1, 0.5, 0, 1 against chance 0.25, 0.5, 0.25, 0.5 (differences 0.75, 0, -0.25,
// 0.5: mean 0.25; the 8 sign patterns of the three non-zero ones give sums 1, -0.5, 1.5, 0, 0,
// -1.5, 0.5, -1, so 4 of 8 reach |1|: p = 0.5). Precision 1, 1, 0, 1 against 0.5 each
// (differences +-0.5, sum 1; |sum| is 0 for 6 of the 16 patterns: p = 10/16).
EvalRecord model(const std::string& test_set = "test") {
  return record("sft", 2, test_set, {"q1", "q2", "q3", "q4"},
                {{"precision", {1, 1, 0, 1}},
                 {"f1", {1, 0.5, 0, 1}},
                 {"answer_length", {5, 6, 7, 8}},
                 {"chance_precision", {0.5, 0.5, 0.5, 0.5}},
                 {"chance_f1", {0.25, 0.5, 0.25, 0.5}}});
}

// The base model answered q4, q2, q1 and a question the model did not (q9): paired by id, the
// F1 differences are q1 1 - 0.5, q2 0, q4 1 - 0 (mean 0.5 over 3 pairs; of the 4 patterns of
// 0.5 and 1, two reach |1.5|: p = 0.5).
EvalRecord base(const std::string& test_set = "test") {
  return record("base", 0, test_set, {"q4", "q2", "q1", "q9"},
                {{"precision", {0, 1, 1, 1}},
                 {"f1", {0, 0.5, 0.5, 1}},
                 {"answer_length", {1, 1, 1, 1}},
                 {"chance_precision", {0.5, 0.5, 0.5, 0.5}},
                 {"chance_f1", {0.25, 0.5, 0.25, 0.5}}});
}

}  // namespace

TEST_CASE("paired comparisons against chance and the base, by hand", "[trainer][paired]") {
  const EvalRecord m = model(), b = base();
  const auto comparisons = paired_comparisons(m, &b, nullptr);
  // Only metrics with a chance column are tested; answer length is not.
  CHECK(find_comparison(comparisons, "chance", "answer_length") == nullptr);
  CHECK(find_comparison(comparisons, "uncorrected", "f1") == nullptr);

  const auto* f1 = find_comparison(comparisons, "chance", "f1");
  REQUIRE(f1);
  CHECK(f1->test.count == 4);
  CHECK(f1->test.difference == Approx(0.25));
  CHECK(f1->test.p_value == Approx(0.5));
  CHECK(f1->test.ci_low <= 0.25);
  CHECK(f1->test.ci_high >= 0.25);
  const auto* precision = find_comparison(comparisons, "chance", "precision");
  REQUIRE(precision);
  CHECK(precision->test.difference == Approx(0.25));
  CHECK(precision->test.p_value == Approx(10.0 / 16));

  const auto* vs_base = find_comparison(comparisons, "base", "f1");
  REQUIRE(vs_base);
  CHECK(vs_base->test.count == 3);
  CHECK(vs_base->test.difference == Approx(0.5));
  CHECK(vs_base->test.p_value == Approx(0.5));
  // Precision against the base: q1 1 - 1, q2 1 - 1, q4 1 - 0: one non-zero difference, p = 1.
  const auto* precision_base = find_comparison(comparisons, "base", "precision");
  REQUIRE(precision_base);
  CHECK(precision_base->test.difference == Approx(1.0 / 3));
  CHECK(precision_base->test.p_value == Approx(1.0));
}

TEST_CASE("results.json keeps the paired tests and reads them strictly", "[trainer][paired]") {
  const EvalRecord m = model(), b = base();
  const auto dir = testing::temp_dir("paired-json");
  const std::string path = (dir / "results.json").string();
  write_results(path, {result_of(b, paired_comparisons(b, nullptr, nullptr)),
                       result_of(m, paired_comparisons(m, &b, nullptr))});
  const auto back = read_results(path);
  REQUIRE(back.size() == 2);
  CHECK(find_comparison(back[0].paired, "base", "f1") == nullptr);
  const auto* f1 = find_comparison(back[1].paired, "base", "f1");
  REQUIRE(f1);
  CHECK(f1->test.count == 3);
  CHECK(f1->test.difference == Approx(0.5));
  CHECK(f1->test.p_value == Approx(0.5));
  const std::string text = read_file(path);
  CHECK(text.find("\"paired\"") != std::string::npos);

  // A results.json written before the paired tests still reads; a broken one is a named error.
  write_file_atomically(path, R"([{"stage": "base", "epoch": 0, "test_set": "t",
    "checkpoint": "base_model", "metrics": {}}])");
  CHECK(read_results(path).front().paired.empty());
  write_file_atomically(path, R"([{"stage": "base", "epoch": 0, "test_set": "t",
    "checkpoint": "base_model", "metrics": {}, "paired": {"luck": {}}}])");
  CHECK_THROWS_WITH(read_results(path), Contains("record 0") && Contains("paired.luck"));
  write_file_atomically(path, R"([{"stage": "base", "epoch": 0, "test_set": "t",
    "checkpoint": "base_model", "metrics": {}, "paired": {"chance": {"f1": {"difference": 0.1,
    "count": 3, "ci_low": 0, "ci_high": 0.2}}}}])");
  CHECK_THROWS_WITH(read_results(path), Contains("paired.chance.f1.p") && Contains("missing"));
}

TEST_CASE("results rebuilt from archives pair each record with the base and the uncorrected",
          "[trainer][paired]") {
  const auto dir = testing::temp_dir("paired-archives").string();
  const RunDir run{dir};
  write_eval_archive(run.eval_archive("base", 0, "test"), base());
  write_eval_archive(run.eval_archive("sft", 2, "test"), model());
  // The corrected answers: F1 1 on every question, against the uncorrected 1, 0.5, 0, 1.
  EvalRecord corrected = record("sft", 2, "test+keyword", {"q1", "q2", "q3", "q4"},
                                {{"f1", {1, 1, 1, 1}}, {"chance_f1", {0.25, 0.5, 0.25, 0.5}}});
  write_eval_archive(run.eval_archive("sft", 2, "test+keyword"), corrected);
  // A test set whose name has a '+' but no correction method is not paired with "a".
  write_eval_archive(run.eval_archive("sft", 2, "a+b"), model("a+b"));
  write_eval_archive(run.eval_archive("sft", 2, "a"), model("a"));

  const auto results = results_from_archives(dir);
  auto find = [&](const std::string& stage, const std::string& test_set) -> const ResultRecord& {
    for (const auto& r : results)
      if (r.stage == stage && r.test_set == test_set) return r;
    FAIL("no result " << stage << " " << test_set);
    throw;
  };
  CHECK(find_comparison(find("base", "test").paired, "base", "f1") == nullptr);
  REQUIRE(find_comparison(find("sft", "test").paired, "base", "f1"));
  CHECK(find_comparison(find("sft", "test").paired, "base", "f1")->test.difference == Approx(0.5));
  const auto* fixed = find_comparison(find("sft", "test+keyword").paired, "uncorrected", "f1");
  REQUIRE(fixed);
  // Differences 0, 0.5, 1, 0: mean 0.375; patterns of 0.5 and 1: 2 of 4 reach |1.5|.
  CHECK(fixed->test.difference == Approx(0.375));
  CHECK(fixed->test.p_value == Approx(0.5));
  // No base archive of test+keyword, and a+b is no correction of a.
  CHECK(find_comparison(find("sft", "test+keyword").paired, "base", "f1") == nullptr);
  CHECK(find_comparison(find("sft", "a+b").paired, "uncorrected", "f1") == nullptr);
  CHECK(uncorrected_test_set("test+keyword_bm25") == std::optional<std::string>("test"));
  CHECK(corrected_test_set("test", "keyword") == "test+keyword");
}
