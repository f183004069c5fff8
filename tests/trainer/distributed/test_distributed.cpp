// Distributed PPO end to end: `citeforge launch` starts real processes that meet over a c10d
// TCPStore and train over Gloo on the CPU. The runs must reproduce the single-process run with
// the same seeds, and a rank killed mid-run must stop the others with a message naming it and
// the phase, leave the last checkpoint intact, and resume to the same result.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_io.h"
#include "models/safetensors.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"
#include "trainer/run/train_checkpoint.h"

using namespace citeforge;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// The tiny config's PPO from the built base: 4 iterations of 4 prompts, evaluated after 2 and 4.
const std::string kRun =
    "run tests/fixtures/configs/tiny.yaml --set pretrain.enabled=false --set 'settings=[ppo]' "
    "--set distributed.timeout_s=5 ";
const std::string kOneLearnerTwoRollout =
    "--set distributed.learners=1 --set distributed.rollout_on_learners=false ";
const std::string kTwoLearners =
    "--set distributed.learners=2 --set distributed.rollout_on_learners=true ";
const std::string kEveryRankBoth =
    "--set distributed.learners=0 --set distributed.rollout_on_learners=true ";

std::vector<nlohmann::json> ppo_records(const fs::path& run) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(read_file((run / "metrics.jsonl").string()));
  for (std::string line; std::getline(lines, line);) {
    auto record = nlohmann::json::parse(line);
    if (record.value("stage", "") == "ppo" && record.contains("reward_mean")) out.push_back(record);
  }
  return out;
}

double max_abs_difference(const fs::path& a, const fs::path& b) {
  auto x = models::open_safetensors(a.string());
  auto y = models::open_safetensors(b.string());
  double worst = 0;
  for (const auto& name : x.names()) {
    REQUIRE(y.contains(name));
    worst = std::max(worst, (x.get(name) - y.get(name)).abs().max().item<double>());
  }
  return worst;
}

std::string results_of(const fs::path& run) {
  return read_file((run / "results.json").string());
}

}  // namespace

TEST_CASE("distributed PPO over Gloo reproduces the single-process run",
          "[trainer][distributed][ppo]") {
  auto root = testing::temp_dir("dist-ppo");
  // The distributed section does not change a single process's run, so one reference serves both.
  auto single =
      testing::run_citeforge(kRun + kOneLearnerTwoRollout + "--out " + (root / "single").string());
  INFO(single.output);
  REQUIRE(single.exit_code == 0);

  {  // 1 learner + 2 rollout ranks: bit-identical
    auto split = testing::run_citeforge("launch --nproc 3 -- " + kRun + kOneLearnerTwoRollout +
                                        "--out " + (root / "split").string());
    INFO(split.output);
    REQUIRE(split.exit_code == 0);
    CHECK_THAT(split.output, Contains("learners [0], rollout [1, 2]"));
    // The rollout ranks sample each row as the single process did, the learner's update is
    // ppo_update on the same batch: everything trained and evaluated is the same, bit for bit.
    CHECK(results_of(root / "split") == results_of(root / "single"));
    for (const char* f :
         {"checkpoints/ppo-2/trainable.safetensors", "checkpoints/ppo-2/optimizer.safetensors"})
      CHECK(read_file((root / "split" / f).string()) == read_file((root / "single" / f).string()));
    auto a = ppo_records(root / "single"), b = ppo_records(root / "split");
    REQUIRE(a.size() == 4);
    REQUIRE(b.size() == 4);
    for (size_t i = 0; i < a.size(); ++i)
      for (const char* k :
           {"reward_mean", "kl", "policy_loss", "value_loss", "entropy", "response_tokens"})
        CHECK(a[i][k] == b[i][k]);
    CHECK(b.back()["policy_version"] == 4);
    CHECK(b.back()["weights_bytes"].get<int64_t>() > 0);
  }

  {  // 2 learners, both rolling out: the same samples, gradients equal up to rounding
    auto dp = testing::run_citeforge("launch --nproc 2 -- " + kRun + kTwoLearners + "--out " +
                                     (root / "dp").string());
    INFO(dp.output);
    REQUIRE(dp.exit_code == 0);
    CHECK_THAT(dp.output, Contains("learners [0, 1], rollout [0, 1]"));
    auto a = ppo_records(root / "single"), b = ppo_records(root / "dp");
    REQUIRE(b.size() == a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("iteration " << i + 1);
      // Same sampled tokens, hence the same rewards and answers.
      CHECK(a[i]["reward_mean"] == b[i]["reward_mean"]);
      CHECK(a[i]["response_tokens"] == b[i]["response_tokens"]);
      // Summing two learners' gradients rounds differently from one backward pass.
      for (const char* k : {"kl", "policy_loss", "value_loss", "entropy"})
        CHECK(b[i][k].get<double>() == Approx(a[i][k].get<double>()).epsilon(1e-4).margin(1e-6));
    }
    CHECK(max_abs_difference(root / "single/checkpoints/ppo-2/trainable.safetensors",
                             root / "dp/checkpoints/ppo-2/trainable.safetensors") < 1e-6);
    CHECK(results_of(root / "dp") == results_of(root / "single"));
  }
  {  // one rank through c10d: the path a single GPU takes with NCCL, here over Gloo
    auto one = testing::run_citeforge("launch --nproc 1 -- " + kRun + kEveryRankBoth + "--out " +
                                      (root / "one").string());
    INFO(one.output);
    REQUIRE(one.exit_code == 0);
    CHECK_THAT(one.output, Contains("[dist] 1 ranks"));
    CHECK(results_of(root / "one") == results_of(root / "single"));
    CHECK(read_file((root / "one/checkpoints/ppo-2/trainable.safetensors").string()) ==
          read_file((root / "single/checkpoints/ppo-2/trainable.safetensors").string()));
  }
}

TEST_CASE("distributed PPO: a killed rank stops the others, the run resumes to the same result",
          "[trainer][distributed][ppo][fault]") {
  auto root = testing::temp_dir("dist-kill");
  const std::string args = kRun + kOneLearnerTwoRollout + "--out " + (root / "run").string();
  const auto start = std::chrono::steady_clock::now();
  // Rank 2 (a rollout rank) dies at the end of iteration 2; the others wait for its iteration-3
  // trajectories and must give up within the 5 s timeout, naming it.
  auto killed =
      testing::run_citeforge("launch --nproc 3 -- " + args, "CITEFORGE_KILL_AT=ppo@rank2:2");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(killed.output);
  CHECK(killed.exit_code != 0);
  CHECK_THAT(killed.output, Contains("rank 2 (pid") && Contains("killed by signal 9"));
  CHECK_THAT(killed.output, Contains("rank 2 sent no heartbeat") &&
                                Contains("'ppo iteration 3: trajectories'") &&
                                Contains("last checkpoint is intact"));
  CHECK(seconds < 60);
  // The checkpoint of iteration 2 is whole.
  const auto last = root / "run/checkpoints/ppo-last";
  REQUIRE(fs::exists(last));
  CHECK_NOTHROW(trainer::verify_checkpoint(last.string()));
  auto state = nlohmann::json::parse(read_file((last / "state.json").string()));
  CHECK(state["global_step"] == 2);

  auto resumed = testing::run_citeforge("launch --nproc 3 -- " + args);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.output, Contains("resuming from"));
  auto single =
      testing::run_citeforge(kRun + kOneLearnerTwoRollout + "--out " + (root / "single").string());
  REQUIRE(single.exit_code == 0);
  CHECK(results_of(root / "run") == results_of(root / "single"));
  CHECK(read_file((root / "run/checkpoints/ppo-2/trainable.safetensors").string()) ==
        read_file((root / "single/checkpoints/ppo-2/trainable.safetensors").string()));
}

TEST_CASE("data-parallel SFT over two ranks trains what one process trains",
          "[trainer][distributed][sft]") {
  auto root = testing::temp_dir("dist-sft");
  // Without dropout (whose masks a data-parallel run draws per micro-batch, see
  // trainer/sft/lm_trainer.h) two ranks' summed gradients are one process's accumulated ones: with
  // two addends the fp32 sum does not depend on the order, so the result is bit-identical.
  // 48 examples in micro-batches of 7 make 7 per epoch: the last step has one, and rank 1 none.
  const std::string args =
      "run tests/fixtures/configs/tiny.yaml --set pretrain.enabled=false "
      "--set lora.dropout=0 --set sft.batch_size=7 --set distributed.timeout_s=20 --out ";
  auto single = testing::run_citeforge(args + (root / "single").string());
  INFO(single.output);
  REQUIRE(single.exit_code == 0);
  auto dp = testing::run_citeforge("launch --nproc 2 -- " + args + (root / "dp").string());
  INFO(dp.output);
  REQUIRE(dp.exit_code == 0);
  for (const char* f :
       {"checkpoints/sft-1/trainable.safetensors", "checkpoints/sft-2/trainable.safetensors"})
    CHECK(read_file((root / "single" / f).string()) == read_file((root / "dp" / f).string()));
  CHECK(results_of(root / "dp") == results_of(root / "single"));
}

TEST_CASE("a process group that cannot be made stops the rank with one line, not an abort",
          "[trainer][distributed]") {
  if (torch::cuda::is_available()) return;  // there NCCL would start: scripts/gpu_check.sh
  // NCCL on a build or machine without CUDA: the group fails after the heartbeat thread started.
  auto out = testing::temp_dir("dist-no-nccl") / "run";
  auto r = testing::run_citeforge(
      "launch --nproc 1 -- run tests/fixtures/configs/tiny.yaml --out " + out.string() +
      " --set device=cuda --set distributed.backend=nccl "
      "--set 'settings=[ppo]'");
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("citeforge run: error: ") != std::string::npos);
  CHECK(r.output.find("nccl") != std::string::npos);
  CHECK(r.output.find("terminate called") == std::string::npos);
  CHECK(r.output.find("signal 6") == std::string::npos);
}
