// `citeforge tables` on a finished run: in place it re-selects and rewrites the run's tables;
// with --out it only reads the run, so a selection on another test set cannot replace the
// run's own. On a run still going, it selects as the run's config says the run will.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
namespace fs = std::filesystem;

TEST_CASE("tables --out selects on another set without touching the run", "[trainer][tables]") {
  const auto root = testing::temp_dir("tables-out");
  const fs::path run = root / "tiny_run";
  auto made = testing::run_citeforge("run tests/fixtures/configs/tiny.yaml --out " + run.string() +
                                     " --set pretrain.enabled=false --set sft.epochs=2" +
                                     " --set selection.metric=precision");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  const std::string selection = read_file((run / "selection.json").string());
  const std::string table1 = read_file((run / "tables/table1_source_quality.md").string());
  REQUIRE(nlohmann::json::parse(selection)["validation"] == "validation");
  REQUIRE(nlohmann::json::parse(selection)["metric"] == "precision");

  const fs::path out = root / "by_ood";
  auto by_ood = testing::run_citeforge("tables " + run.string() + " --validation test_ood --out " +
                                       out.string() + " --no-plots");
  INFO(by_ood.output);
  REQUIRE(by_ood.exit_code == 0);
  CHECK(by_ood.output.find("the run is left as it was") != std::string::npos);
  CHECK(read_file((run / "selection.json").string()) == selection);
  CHECK(read_file((run / "tables/table1_source_quality.md").string()) == table1);
  auto moved = nlohmann::json::parse(read_file((out / "tiny_run/selection.json").string()));
  CHECK(moved["validation"] == "test_ood");
  for (const char* f :
       {"tiny_run/results.json", "tiny_run/tables/table3_correlation.md", "tables.md"})
    CHECK(fs::exists(out / f));

  // A run still going has no selection.json yet: its resolved config names the metric and set.
  fs::create_directories(root / "going");
  fs::copy(run, root / "going/tiny_run", fs::copy_options::recursive);
  fs::remove(root / "going/tiny_run/selection.json");
  auto going = testing::run_citeforge("tables " + (root / "going/tiny_run").string() + " --out " +
                                      (root / "mid").string() + " --no-plots");
  INFO(going.output);
  REQUIRE(going.exit_code == 0);
  auto mid = nlohmann::json::parse(read_file((root / "mid/tiny_run/selection.json").string()));
  CHECK(mid["metric"] == "precision");
  CHECK(mid["validation"] == "validation");
  CHECK(!fs::exists(root / "going/tiny_run/selection.json"));

  // Two runs of one name would write into the same folder: refused, naming the run.
  fs::create_directories(root / "elsewhere");
  fs::copy(run, root / "elsewhere/tiny_run", fs::copy_options::recursive);
  auto twice = testing::run_citeforge("tables " + run.string() + " " +
                                      (root / "elsewhere/tiny_run").string() + " --out " +
                                      (root / "both").string() + " --no-plots");
  CHECK(twice.exit_code != 0);
  CHECK(twice.output.find("also named 'tiny_run'") != std::string::npos);

  // Without --out the run itself is re-selected, as before.
  auto in_place =
      testing::run_citeforge("tables " + run.string() + " --validation test_ood --no-plots");
  INFO(in_place.output);
  REQUIRE(in_place.exit_code == 0);
  CHECK(nlohmann::json::parse(read_file((run / "selection.json").string()))["validation"] ==
        "test_ood");
}

TEST_CASE("tables in place gives the run's own Table 3 roles", "[trainer][tables]") {
  // Three sets: validation (selected on), test (in distribution) and test_ood (ood: true). The
  // run correlates validation with test_ood only; re-tabling must not add "validation & test".
  const auto root = testing::temp_dir("tables-roles");
  const fs::path run = root / "three_sets";
  auto made = testing::run_citeforge(
      "run tests/fixtures/configs/tiny.yaml --out " + run.string() +
      " --set pretrain.enabled=false --set sft.epochs=2 --set 'data.test_sets=[{name: validation, "
      "path: \"synth:validation\"}, {name: test, path: \"synth:test\"}, {name: test_ood, path: "
      "\"synth:test_ood\", ood: true}]'");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  const std::string table3 = read_file((run / "tables/table3_correlation.md").string());
  REQUIRE(table3.find("validation & test_ood") != std::string::npos);
  REQUIRE(table3.find("validation & test ") == std::string::npos);

  auto again = testing::run_citeforge("tables " + run.string() + " --no-plots");
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK(read_file((run / "tables/table3_correlation.md").string()) == table3);

  // Selecting on the in-distribution test set pairs it with the OOD set, the paper's Table 3.
  auto by_id = testing::run_citeforge("tables " + run.string() + " --validation test --out " +
                                      (root / "by_id").string() + " --no-plots");
  INFO(by_id.output);
  REQUIRE(by_id.exit_code == 0);
  const std::string paired =
      read_file((root / "by_id/three_sets/tables/table3_correlation.md").string());
  CHECK(paired.find("test & test_ood") != std::string::npos);
  CHECK(paired.find("test & validation") == std::string::npos);
}
