// checkpoint_keep_last: a run keeps each stage's best checkpoint so far and its last K, says what
// it removed, and a run killed and resumed under it ends with the same checkpoints and results.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "common/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"
#include "trainer/eval/results.h"
#include "trainer/eval/selection.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {

std::string run_args(const fs::path& out) {
  return "run tests/fixtures/configs/tiny.yaml --out " + out.string() +
         " --set pretrain.enabled=false --set sft.epochs=4 --set checkpoint_keep_last=2";
}

std::set<std::string> checkpoints(const fs::path& run) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    names.insert(e.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("run: checkpoint_keep_last keeps the best and the last K, and resumes after a kill",
          "[trainer][pipeline][resume][checkpoints]") {
  const auto root = testing::temp_dir("keep_last");
  auto straight = testing::run_citeforge(run_args(root / "straight"));
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);
  // The best SFT checkpoint by the run's selection (f1 on validation) over all four epochs.
  const auto results = trainer::read_results((root / "straight/results.json").string());
  const auto best = trainer::select_checkpoint(results, "sft", {"f1", "validation"});
  REQUIRE(best);
  const std::string best_name = fs::path(best->checkpoint).filename().string();
  std::set<std::string> expected{"sft-last", "sft-3", "sft-4", best_name};
  CHECK(checkpoints(root / "straight") == expected);
  for (const char* old : {"sft-1", "sft-2"})
    if (best_name != old)
      CHECK(straight.output.find(std::string("[checkpoints] removed ") + old) != std::string::npos);
  // Every epoch was still evaluated: the results keep what the checkpoints no longer hold.
  CHECK(trainer::find_result(results, "sft", 1, "validation"));

  // 6 optimiser steps an epoch: killed in epoch 4, after sft-1 and sft-2 were removed.
  auto killed = testing::run_citeforge(run_args(root / "killed"), "CITEFORGE_KILL_AT=sft:21");
  CHECK(killed.killed);
  auto resumed = testing::run_citeforge(run_args(root / "killed"));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(checkpoints(root / "killed") == expected);
  CHECK(read_file((root / "straight/results.json").string()) ==
        read_file((root / "killed/results.json").string()));
  CHECK(read_file((root / "straight/checkpoints/sft-4/trainable.safetensors").string()) ==
        read_file((root / "killed/checkpoints/sft-4/trainable.safetensors").string()));
}
