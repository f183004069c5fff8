// A run directory records each build that starts or continues it (builds.jsonl), and refuses to
// continue with another config before it records anything.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_io.h"
#include "common/version.h"
#include "tests/support/test_paths.h"
#include "trainer/config/run_config.h"
#include "trainer/run/run_dir.h"

using namespace citeforge;

namespace {

std::vector<nlohmann::json> records(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("a run directory records the build that starts it and each that continues it",
          "[trainer][run]") {
  const trainer::RunDir run{(testing::temp_dir("run_dir_builds") / "run").string()};
  const auto config =
      trainer::load_run_config(testing::source_path("tests/fixtures/configs/tiny.yaml"));
  trainer::prepare_run_dir(config, run);
  trainer::prepare_run_dir(config, run);
  const auto builds = records(run.builds());
  REQUIRE(builds.size() == 2);
  CHECK(builds[0]["event"] == "started");
  CHECK(builds[1]["event"] == "continued");
  for (const auto& b : builds) {
    CHECK(b["citeforge"] == version_text());
    CHECK(b["citeforge"].get<std::string>().rfind("citeforge ", 0) == 0);
    const std::string time = b["time"];
    CHECK(time.size() == 20);
    CHECK(time.back() == 'Z');
  }

  // Another config is refused before anything is recorded.
  const auto other = trainer::load_run_config(
      testing::source_path("tests/fixtures/configs/tiny.yaml"), {"sft.epochs=7"});
  CHECK_THROWS_WITH(trainer::prepare_run_dir(other, run), Catch::Contains("sft.epochs"));
  CHECK(records(run.builds()).size() == 2);
}
