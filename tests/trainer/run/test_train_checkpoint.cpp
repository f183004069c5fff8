#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "tests/support/test_paths.h"
#include "trainer/run/train_checkpoint.h"

using namespace citeforge;
using Catch::Matchers::Contains;

TEST_CASE("a checkpoint restores tensors, optimiser, RNG and state", "[trainer][checkpoint]") {
  auto dir = testing::temp_dir("ckpt") / "sft-last";
  torch::manual_seed(3);
  auto w = torch::randn({4, 3}).requires_grad_(true);
  torch::optim::AdamW opt({w}, torch::optim::AdamWOptions(0.1));
  w.sum().backward();
  opt.step();
  trainer::CheckpointContents saved{{"sft", 2, 5, 11, false, {{"beta", 0.07}}}, {{"w", w}}, &opt};
  trainer::save_checkpoint(dir.string(), saved, {{"note.txt", "hello"}});
  const auto after_save = torch::rand({3});  // what the RNG gives right after the checkpoint

  auto w2 = torch::zeros({4, 3}).requires_grad_(true);
  torch::optim::AdamW opt2({w2}, torch::optim::AdamWOptions(0.1));
  trainer::CheckpointContents loaded{{}, {{"w", w2}}, &opt2};
  torch::manual_seed(99);
  auto state = trainer::load_checkpoint(dir.string(), loaded);
  CHECK(torch::equal(w2, w));
  CHECK(torch::equal(torch::rand({3}), after_save));
  CHECK(state.stage == "sft");
  CHECK(state.epoch == 2);
  CHECK(state.batches_done == 5);
  CHECK(state.global_step == 11);
  CHECK(state.extra["beta"] == 0.07);
  // The optimiser continues identically: one more step from both gives the same weights.
  for (auto* pair : {&w, &w2}) pair->mutable_grad() = torch::ones({4, 3});
  opt.step();
  opt2.step();
  CHECK(torch::equal(w, w2));
  // Saving again replaces the checkpoint whole, leaving no temporary directories behind.
  trainer::save_checkpoint(dir.string(), saved);
  CHECK_FALSE(std::filesystem::exists(dir.string() + ".tmp"));
  CHECK_FALSE(std::filesystem::exists(dir.string() + ".old"));
}

TEST_CASE("a corrupted checkpoint is detected and the file named",
          "[trainer][checkpoint][errors]") {
  auto dir = testing::temp_dir("ckpt-bad") / "sft-1";
  auto w = torch::arange(12, torch::kFloat32);
  trainer::save_checkpoint(dir.string(), {{"sft", 1, 0, 3, true, {}}, {{"w", w}}, nullptr});
  trainer::verify_checkpoint(dir.string());
  const auto file = (dir / "trainable.safetensors").string();
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  CHECK_THROWS_WITH(trainer::verify_checkpoint(dir.string()),
                    Contains("trainable.safetensors") && Contains("checksum mismatch"));
  std::filesystem::remove(dir / "state.json");
  trainer::CheckpointContents c{{}, {{"w", torch::zeros({12})}}, nullptr};
  CHECK_THROWS_WITH(trainer::load_checkpoint(dir.string(), c), Contains("corrupted checkpoint"));
  CHECK_THROWS_WITH(trainer::verify_checkpoint("/no/such/checkpoint"),
                    Contains("not a checkpoint"));
}
