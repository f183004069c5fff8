// Checkpoint selection by the validation metric, and results.json / selection.json round trips.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "tests/support/test_paths.h"
#include "trainer/eval/results.h"
#include "trainer/eval/selection.h"
#include "trainer/run/run_dir.h"

using namespace citeforge;
using namespace citeforge::trainer;
using Catch::Matchers::Contains;

namespace {

ResultRecord result(const std::string& stage, int epoch, const std::string& test_set, double f1,
                    double sq = 0.5) {
  ResultRecord r;
  r.stage = stage;
  r.epoch = epoch;
  r.test_set = test_set;
  r.checkpoint =
      stage == "base" ? "base_model" : "checkpoints/" + stage + "-" + std::to_string(epoch);
  r.metrics = {{"f1", {f1, 10, f1 - 0.1, f1 + 0.1}}, {"source_quality", {sq, 10, 0, 1}}};
  return r;
}

std::vector<ResultRecord> sample_results() {
  return {result("base", 0, "validation", 0.1),    result("base", 0, "ood", 0.05),
          result("sft", 1, "validation", 0.2),     result("sft", 1, "ood", 0.3),
          result("sft", 2, "validation", 0.5),     result("sft", 2, "ood", 0.1),
          result("sft", 3, "validation", 0.5),     result("sft", 3, "ood", 0.6),
          result("ppo", 1, "validation", 0.4, 0.9)};
}

}  // namespace

TEST_CASE("selection takes the best validation epoch, the earliest on ties",
          "[trainer][selection]") {
  auto chosen = select_checkpoint(sample_results(), "sft", {"f1", "validation"});
  REQUIRE(chosen);
  CHECK(chosen->epoch == 2);
  CHECK(chosen->checkpoint == "checkpoints/sft-2");
  CHECK(chosen->value == 0.5);
  // The selected checkpoint's out-of-distribution score is reported, not the best OOD score.
  REQUIRE(chosen->scores.size() == 2);
  for (const auto& [test_set, scores] : chosen->scores)
    CHECK(find_aggregate(scores, "f1")->mean == (test_set == "ood" ? 0.1 : 0.5));
  CHECK_FALSE(select_checkpoint(sample_results(), "sft+ppo", {"f1", "validation"}));
  auto by_quality = select_checkpoint(sample_results(), "ppo", {"source_quality", "validation"});
  CHECK(by_quality->value == 0.9);
  CHECK_THROWS_WITH(select_checkpoint(sample_results(), "sft", {"reward", "validation"}),
                    Contains("reward"));
  CHECK_THROWS_WITH(select_checkpoint(sample_results(), "sft", {"f1", "dev"}), Contains("dev"));
  auto all = select_checkpoints(sample_results(), {"f1", "validation"});
  REQUIRE(all.size() == 3);
  CHECK(all[0].setting == "base");
  CHECK(all[1].setting == "sft");
  CHECK(all[2].setting == "ppo");
}

TEST_CASE("results.json and selection.json read back as written", "[trainer][selection]") {
  auto dir = testing::temp_dir("results");
  auto results = sample_results();
  results[1].metrics[0].second.mean = std::nan("");  // an empty aggregate is written as null
  write_results(trainer::RunDir{dir.string()}.results(), results);
  auto back = read_results(trainer::RunDir{dir.string()}.results());
  REQUIRE(back.size() == results.size());
  CHECK(std::isnan(back[1].metrics[0].second.mean));
  CHECK(back[4].checkpoint == "checkpoints/sft-2");
  CHECK(back[4].metrics[0].second.ci_high == Approx(0.6));
  // Recording replaces the same (stage, epoch, test set) instead of appending.
  record_result(trainer::RunDir{dir.string()}.results(), result("sft", 2, "validation", 0.7));
  back = read_results(trainer::RunDir{dir.string()}.results());
  CHECK(back.size() == results.size());
  CHECK(select_checkpoint(back, "sft", {"f1", "validation"})->value == 0.7);

  auto selections = select_checkpoints(back, {"f1", "validation"});
  write_selection(trainer::RunDir{dir.string()}.selection(), {"f1", "validation"}, selections);
  SelectionOptions options;
  auto read = read_selection(trainer::RunDir{dir.string()}.selection(), &options);
  CHECK(options.metric == "f1");
  REQUIRE(read.size() == selections.size());
  CHECK(read[1].epoch == 2);
}
