// The `distributed` section of a run config: defaults, validation errors naming the key, the
// resolved config, and the shipped distributed configs.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "tests/support/minimal_config.h"
#include "tests/support/test_paths.h"
#include "trainer/config/run_config.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {
const std::string& kBase = testing::kMinimalRunConfig;
}  // namespace

TEST_CASE("distributed config: defaults, and absent from a resolved config without it",
          "[trainer][config][distributed]") {
  auto plain = trainer::parse_run_config(kBase, "c.yaml");
  CHECK_FALSE(plain.distributed_enabled);
  CHECK(trainer::run_config_to_yaml(plain).find("distributed") == std::string::npos);
  auto c = trainer::parse_run_config(
      kBase + "distributed: {learners: 1, rollout_on_learners: false}", "c.yaml");
  CHECK(c.distributed_enabled);
  CHECK(c.distributed.backend == trainer::Backend::gloo);
  CHECK(c.distributed.learners == 1);
  CHECK_FALSE(c.distributed.rollout_on_learners);
  CHECK(c.distributed.timeout_s == 300);
  auto again = trainer::parse_run_config(trainer::run_config_to_yaml(c), "resolved.yaml");
  CHECK(trainer::run_config_to_yaml(again) == trainer::run_config_to_yaml(c));
}

TEST_CASE("distributed config: errors name the key", "[trainer][config][distributed][errors]") {
  auto parse = [](const std::vector<std::string>& sets) {
    return trainer::parse_run_config(kBase, "c.yaml", sets);
  };
  CHECK_THROWS_WITH(parse({"distributed.backend=mpi"}), Contains("c.yaml") &&
                                                            Contains("distributed.backend") &&
                                                            Contains("gloo or nccl"));
  CHECK_THROWS_WITH(parse({"distributed.backend=nccl"}),
                    Contains("distributed.backend") && Contains("device: cuda"));
  CHECK_THROWS_WITH(parse({"distributed.learners=-1"}), Contains("distributed.learners"));
  CHECK_THROWS_WITH(parse({"distributed.rollout_on_learners=false"}),
                    Contains("distributed.rollout_on_learners"));
  CHECK_THROWS_WITH(parse({"distributed.timeout_s=0"}), Contains("distributed.timeout_s"));
  CHECK_THROWS_WITH(parse({"distributed.ranks=3"}), Contains("distributed.ranks"));
}

TEST_CASE("the shipped distributed configs load", "[trainer][config][distributed]") {
  auto demo = trainer::load_run_config(testing::source_path("configs/demo_distributed.yaml"));
  CHECK(demo.distributed.backend == trainer::Backend::gloo);
  CHECK(demo.distributed.learners == 1);
  CHECK_FALSE(demo.distributed.rollout_on_learners);
  CHECK(demo.ppo.batch_size % 2 == 0);  // two rollout ranks take equal shares
  auto gpu = trainer::load_run_config(testing::source_path("configs/distributed_gpu.yaml"));
  CHECK(gpu.distributed.backend == trainer::Backend::nccl);
  CHECK(gpu.device == trainer::Device::cuda);
  CHECK(gpu.distributed.learners == 0);
}
