// The base a command reads an adapter with: quantised as the run that trained the adapter, so
// the model methods read the model that wrote the answers.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"
#include "tests/support/test_paths.h"
#include "trainer/cli/cli_model.h"
#include "trainer/config/run_config.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> said;
void remember(const std::string& line) {
  said.push_back(line);
}

std::string quantization_of(const std::vector<std::string>& args) {
  static const trainer::CliCommand command{"fix-citations", "", "", "", trainer::model_options()};
  auto cli = trainer::parse_cli(command, args);
  return trainer::choice_name(trainer::base_quantization(cli, "fix-citations", remember));
}

// A run's resolved config (the tiny test run's) with the given model.quantization.
std::string resolved_config(const std::string& quantization) {
  const std::string file = testing::source_path("tests/fixtures/configs/tiny.yaml");
  return trainer::run_config_to_yaml(trainer::parse_run_config(
      read_file(file), file, {"model.quantization=" + quantization}, trainer::FileChecks::off));
}
}  // namespace

TEST_CASE("an adapter is read on the base its run quantised", "[cli][nf4]") {
  const auto run = testing::temp_dir("cli-quantization") / "run";
  fs::create_directories(run / "checkpoints/sft+ppo-1");
  const std::string adapter = (run / "checkpoints/sft+ppo-1").string();
  write_file_atomically((run / "config.resolved.yaml").string(), resolved_config("nf4"));
  said.clear();
  CHECK(quantization_of({"--adapter", adapter}) == "nf4");
  REQUIRE(said.size() == 1);
  CHECK(said[0].find("NF4") != std::string::npos);
  CHECK(quantization_of({"--adapter", adapter + "/"}) == "nf4");
  // Said outright, the flag wins; without an adapter or outside a run the base stays dense.
  CHECK(quantization_of({"--adapter", adapter, "--quantization", "none"}) == "none");
  CHECK(quantization_of({}) == "none");
  fs::create_directories(run.parent_path() / "loose");
  CHECK(quantization_of({"--adapter", (run.parent_path() / "loose").string()}) == "none");
  write_file_atomically((run / "config.resolved.yaml").string(), resolved_config("none"));
  CHECK(quantization_of({"--adapter", adapter}) == "none");

  // Bad values are errors naming the flag or the file and key.
  CHECK_THROWS_WITH(quantization_of({"--quantization", "int8"}),
                    Catch::Contains("--quantization must be none or nf4"));
  std::string bad = resolved_config("none");
  bad.replace(bad.find("quantization: none"), 18, "quantization: q8");
  write_file_atomically((run / "config.resolved.yaml").string(), bad);
  CHECK_THROWS_WITH(
      quantization_of({"--adapter", adapter}),
      Catch::Contains("config.resolved.yaml") && Catch::Contains("model.quantization"));
  write_file_atomically((run / "config.resolved.yaml").string(), "model: [unclosed\n");
  CHECK_THROWS_WITH(quantization_of({"--adapter", adapter}),
                    Catch::Contains("config.resolved.yaml"));
}
