// `citeforge tables` on a finished run: in place it re-selects and rewrites the run's tables;
// with --out it only reads the run, so a selection on another test set cannot replace the
// run's own. On a run still going, it selects as the run's config says the run will.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "tests/cli_runner.h"
#include "tests/test_paths.h"

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
