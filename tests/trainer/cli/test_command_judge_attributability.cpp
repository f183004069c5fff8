// `citeforge judge-attributability` with the real model on shipped data: GPT-4's SynSciQA_test
// answers judged with a given threshold, and the threshold chosen on SynSciQA++ pairs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "data/synsciqa.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

TEST_CASE("judge-attributability scores GPT-4's answers with SmolLM2 as judge, calibrated",
          "[cli][attribution][synsciqa][smollm2]") {
  const auto dir = testing::temp_dir("judge-attributability");
  auto test = data::import_synsciqa(
      testing::dataset_path("synsciqa/SynSciQA_test.csv"),
      testing::dataset_path("synsciqa/SynSciQA_test_with_golden_sources.csv"), nullptr);
  test.resize(2);
  const auto data = (dir / "test.jsonl").string();
  data::write_examples_jsonl(data, test);
  auto train = data::import_synsciqa(testing::dataset_path("synsciqa/SynSciQA++.json"),
                                     std::nullopt, nullptr);
  train.resize(4);
  const auto labelled = (dir / "labelled.jsonl").string();
  data::write_examples_jsonl(labelled, train);
  const std::string model = " --model " +
                            testing::source_path("weights/SmolLM2-135M-Instruct.Q4_1.gguf") +
                            " --chat smollm2 --templates " +
                            testing::source_path("configs/templates") + " --dtype bfloat16";

  auto r = testing::run_citeforge(
      "judge-attributability --data " + data + " --reference gpt-4 --calibrate " + labelled +
      " --calibrate-reference response --out " + (dir / "out").string() + model);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("judge calibrated on") && Contains("held-out pairs") &&
                           Contains("attributability ") && Contains("(chance "));
  auto summary = nlohmann::json::parse(read_file((dir / "out/summary.json").string()));
  const auto& calibration = summary["calibration"];
  CHECK(calibration["chosen_on"]["supported_pairs"].get<int>() > 0);
  CHECK(calibration["held_out"]["unsupported_pairs"].get<int>() > 0);
  CHECK(summary["threshold"] == calibration["threshold"]);
  const double score = summary["attributability"]["mean"].get<double>();
  CHECK(score >= 0.0);
  CHECK(score <= 1.0);
  CHECK(summary["sentences"].get<int>() >= summary["entailed"].get<int>());
  CHECK(file_exists((dir / "out/attributability.jsonl").string()));
  // The paired test against the chance sources, and `citeforge paired` on the per-answer file
  // computes the same one.
  const auto& paired = summary["paired"]["chance"]["attributability"];
  CHECK(paired["count"] == summary["attributability"]["count"]);
  const std::string per_answer = (dir / "out/attributability.jsonl").string();
  auto again =
      testing::run_citeforge("paired " + per_answer + ":attributability " + per_answer + ":chance");
  REQUIRE(again.exit_code == 0);
  const auto recomputed = nlohmann::json::parse(again.output.substr(
      again.output.find('{'), again.output.rfind('}') - again.output.find('{') + 1));
  CHECK(recomputed["difference"] == paired["difference"]);
  CHECK(recomputed["p"] == paired["p"]);

  // A fixed threshold needs no labelled data; both, or neither, is refused.
  auto fixed = testing::run_citeforge("judge-attributability --data " + data +
                                      " --reference gpt-4 --threshold 100" + model);
  INFO(fixed.output);
  REQUIRE(fixed.exit_code == 0);
  CHECK_THAT(fixed.output, Contains("attributability 0.000"));  // nothing clears 100
  auto neither =
      testing::run_citeforge("judge-attributability --data " + data + " --reference gpt-4" + model);
  CHECK(neither.exit_code != 0);
  CHECK_THAT(neither.output, Contains("--threshold T or --calibrate"));
  auto no_reference = testing::run_citeforge("judge-attributability --data " + data +
                                             " --reference gpt-4 --calibrate " + labelled + model);
  CHECK(no_reference.exit_code != 0);
  CHECK_THAT(no_reference.output, Contains("--calibrate-reference"));
}
