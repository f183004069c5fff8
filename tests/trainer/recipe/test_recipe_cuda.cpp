// `citeforge run` on a GPU: the papers' protocol trains again after every evaluation, and a GPU
// run killed and resumed repeats the uninterrupted one (its dropout draws from the GPU's own
// generator, which checkpoints keep). Skipped without a CUDA device; scripts/gpu_check.sh runs
// them on a GPU machine.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/file_io.h"
#include "models/safetensors.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {

std::string cuda_run(const fs::path& out, const std::string& extra) {
  return "run tests/fixtures/configs/tiny.yaml --out " + out.string() +
         " --set device=cuda --set pretrain.enabled=false " + extra;
}

bool have_cuda() {
  if (torch::cuda::is_available()) return true;
  WARN("no CUDA device: GPU runs are checked on a GPU machine (scripts/gpu_check.sh)");
  return false;
}

}  // namespace

TEST_CASE("run on CUDA: SFT and PPO train again after an evaluation", "[cuda][pipeline]") {
  if (!have_cuda()) return;
  auto root = testing::temp_dir("run-cuda-train-eval-train");
  // Two SFT epochs, each evaluated; PPO evaluates after iteration 2 of 4 (tiny.yaml).
  for (const char* dtype : {"float32", "bfloat16"}) {
    INFO(dtype);
    const std::string precision =
        std::string("--set model.dtype=") + dtype +
        (std::string(dtype) == "bfloat16" ? " --set model.quantization=nf4" : "");
    auto r = testing::run_citeforge(
        cuda_run(root / dtype, precision + " --set 'settings=[sft, ppo, sft+ppo]'"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    for (const char* f :
         {"eval/sft-1/validation.h5", "eval/sft-2/validation.h5", "eval/ppo-1/validation.h5",
          "eval/ppo-2/validation.h5", "eval/sft+ppo-2/test_ood.h5", "selection.json"})
      CHECK(fs::exists(root / dtype / f));
  }
}

TEST_CASE("run on CUDA: SFT killed mid-epoch resumes like an uninterrupted run",
          "[cuda][pipeline][resume]") {
  if (!have_cuda()) return;
  auto root = testing::temp_dir("run-cuda-kill");
  // LoRA dropout 0.1 (tiny.yaml) draws its masks from the GPU's generator.
  const std::string extra = "--set 'settings=[sft]'";
  auto straight = testing::run_citeforge(cuda_run(root / "straight", extra));
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);
  auto killed = testing::run_citeforge(cuda_run(root / "killed", extra), "CITEFORGE_KILL_AT=sft:3");
  CHECK(killed.killed);
  CHECK(fs::exists(root / "killed/checkpoints/sft-last/rng_cuda0.pt"));
  auto resumed = testing::run_citeforge(cuda_run(root / "killed", extra));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resuming") != std::string::npos);
  CHECK(resumed.output.find("fresh random state") == std::string::npos);
  // A GPU's kernels may add in another order from one run to the next, so the adapters are
  // compared within rounding; other dropout masks would move them by orders of magnitude more.
  auto a = models::open_safetensors(
      (root / "straight/checkpoints/sft-2/trainable.safetensors").string());
  auto b =
      models::open_safetensors((root / "killed/checkpoints/sft-2/trainable.safetensors").string());
  REQUIRE(a.names() == b.names());
  for (const auto& name : a.names()) {
    INFO(name);
    CHECK(torch::allclose(a.get(name), b.get(name), /*rtol=*/1e-4, /*atol=*/1e-6));
  }
}
