// Start-up from torchrun's and SLURM's variables, role assignment and batch sharding.
#include <catch2/catch.hpp>
#include <map>

#include "common/error.h"
#include "trainer/distributed/dist_env.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {
trainer::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}
}  // namespace

TEST_CASE("dist env: no launcher variables is a single process", "[trainer][distributed]") {
  auto env = trainer::read_dist_env(env_of({}));
  CHECK(env.world_size == 1);
  CHECK(env.rank == 0);
  CHECK(env.source.empty());
  auto alone = trainer::read_dist_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  CHECK(alone.world_size == 1);
  CHECK(alone.source.empty());
  // With a rendezvous address, a world of one (one GPU) still takes the distributed path.
  auto one = trainer::read_dist_env(env_of({{"RANK", "0"},
                                            {"WORLD_SIZE", "1"},
                                            {"MASTER_ADDR", "127.0.0.1"},
                                            {"MASTER_PORT", "29500"}}));
  CHECK(one.world_size == 1);
  CHECK(one.source == "torchrun");
}

TEST_CASE("dist env: torchrun's variables", "[trainer][distributed]") {
  auto env = trainer::read_dist_env(env_of({{"RANK", "2"},
                                            {"WORLD_SIZE", "4"},
                                            {"LOCAL_RANK", "0"},
                                            {"MASTER_ADDR", "node7"},
                                            {"MASTER_PORT", "29500"},
                                            {"SLURM_PROCID", "9"}}));
  CHECK(env.source == "torchrun");  // torchrun's variables win over SLURM's
  CHECK(env.rank == 2);
  CHECK(env.world_size == 4);
  CHECK(env.local_rank == 0);
  CHECK(env.master_addr == "node7");
  CHECK(env.master_port == 29500);
}

TEST_CASE("dist env: SLURM's variables as the fallback", "[trainer][distributed]") {
  auto env = trainer::read_dist_env(env_of({{"SLURM_PROCID", "5"},
                                            {"SLURM_NTASKS", "8"},
                                            {"SLURM_LOCALID", "1"},
                                            {"MASTER_ADDR", "10.0.0.1"},
                                            {"MASTER_PORT", "1234"}}));
  CHECK(env.source == "slurm");
  CHECK(env.rank == 5);
  CHECK(env.world_size == 8);
  CHECK(env.local_rank == 1);
}

TEST_CASE("dist env: missing or malformed variables name the variable",
          "[trainer][distributed][errors]") {
  CHECK_THROWS_WITH(trainer::read_dist_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}})),
                    Contains("MASTER_ADDR is not set"));
  CHECK_THROWS_WITH(
      trainer::read_dist_env(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}})),
      Contains("MASTER_PORT is not set"));
  CHECK_THROWS_WITH(trainer::read_dist_env(env_of({{"RANK", "3"}, {"WORLD_SIZE", "2"}})),
                    Contains("RANK='3'"));
  CHECK_THROWS_WITH(trainer::read_dist_env(env_of({{"WORLD_SIZE", "two"}})),
                    Contains("WORLD_SIZE='two'"));
  CHECK_THROWS_WITH(trainer::read_dist_env(env_of({{"WORLD_SIZE", "2"}})),
                    Contains("RANK is not set"));
}

TEST_CASE("dist roles: one learner and the rest rolling out, or every rank both",
          "[trainer][distributed]") {
  trainer::DistributedSection s;
  s.learners = 1;
  s.rollout_on_learners = false;
  auto split = trainer::assign_roles(s, 3);
  CHECK(split.learners == std::vector<int>{0});
  CHECK(split.rollout == std::vector<int>{1, 2});
  CHECK(split.is_learner(0));
  CHECK_FALSE(split.is_learner(1));
  CHECK(split.rollout_index(0) == -1);
  CHECK(split.rollout_index(2) == 1);

  trainer::DistributedSection every;  // learners 0 = all, and they roll out
  auto both = trainer::assign_roles(every, 2);
  CHECK(both.learners == std::vector<int>{0, 1});
  CHECK(both.rollout == std::vector<int>{0, 1});

  s.learners = 4;
  CHECK_THROWS_WITH(trainer::assign_roles(s, 3, "c.yaml"),
                    Contains("c.yaml") && Contains("distributed.learners"));
  s.learners = 2;
  CHECK_THROWS_WITH(trainer::assign_roles(s, 2, "c.yaml"),
                    Contains("distributed.rollout_on_learners"));
}

TEST_CASE("dist shards: contiguous, covering, sizes differ by at most one",
          "[trainer][distributed]") {
  using R = std::pair<int64_t, int64_t>;
  CHECK(trainer::shard_range(4, 2, 0) == R{0, 2});
  CHECK(trainer::shard_range(4, 2, 1) == R{2, 4});
  CHECK(trainer::shard_range(5, 3, 0) == R{0, 2});
  CHECK(trainer::shard_range(5, 3, 1) == R{2, 4});
  CHECK(trainer::shard_range(5, 3, 2) == R{4, 5});
  CHECK(trainer::shard_range(1, 3, 2) == R{1, 1});  // an empty share
}
