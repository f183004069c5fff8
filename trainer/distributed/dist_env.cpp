#include "trainer/distributed/dist_env.h"

#include <algorithm>
#include <cstdlib>

#include "common/error.h"

namespace citeforge::trainer {
namespace {

int parse_int(const EnvLookup& lookup, const char* name, int lo, int hi) {
  const char* text = lookup(name);
  if (!text || !*text) throw Error("environment: " + std::string(name) + " is not set");
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < lo || value > hi)
    throw Error("environment: " + std::string(name) + "='" + text + "' is not an integer in [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return int(value);
}

bool is_set(const EnvLookup& lookup, const char* name) {
  const char* text = lookup(name);
  return text && *text;
}

}  // namespace

DistEnv read_dist_env(const EnvLookup& given) {
  const EnvLookup lookup = given ? given : EnvLookup([](const char* n) { return std::getenv(n); });
  DistEnv env;
  const char *rank_var = nullptr, *world_var = nullptr, *local_var = nullptr;
  if (is_set(lookup, "RANK") || is_set(lookup, "WORLD_SIZE")) {
    env.source = "torchrun";
    rank_var = "RANK", world_var = "WORLD_SIZE", local_var = "LOCAL_RANK";
  } else if (is_set(lookup, "SLURM_PROCID") && is_set(lookup, "SLURM_NTASKS")) {
    env.source = "slurm";
    rank_var = "SLURM_PROCID", world_var = "SLURM_NTASKS", local_var = "SLURM_LOCALID";
  } else {
    return env;
  }
  env.world_size = parse_int(lookup, world_var, 1, 1 << 20);
  env.rank = parse_int(lookup, rank_var, 0, env.world_size - 1);
  // A single-task SLURM job, or WORLD_SIZE=1 without a rendezvous address, is an ordinary
  // single process; with one (torchrun --nproc-per-node 1) it is a world of one rank.
  if (env.world_size == 1 && !(is_set(lookup, "MASTER_ADDR") && is_set(lookup, "MASTER_PORT")))
    return DistEnv{};
  env.local_rank = is_set(lookup, local_var) ? parse_int(lookup, local_var, 0, 1 << 20) : 0;
  if (!is_set(lookup, "MASTER_ADDR"))
    throw Error(std::string("environment: MASTER_ADDR is not set (") + world_var + "=" +
                std::to_string(env.world_size) +
                "); set it to the host of rank 0, e.g. the first node of the job");
  env.master_addr = lookup("MASTER_ADDR");
  env.master_port = parse_int(lookup, "MASTER_PORT", 1, 65535);
  return env;
}

bool DistRoles::is_learner(int rank) const {
  return std::find(learners.begin(), learners.end(), rank) != learners.end();
}

int DistRoles::rollout_index(int rank) const {
  auto it = std::find(rollout.begin(), rollout.end(), rank);
  return it == rollout.end() ? -1 : int(it - rollout.begin());
}

DistRoles assign_roles(const DistributedSection& s, int world_size, const std::string& file) {
  const int learners = s.learners == 0 ? world_size : s.learners;
  if (learners > world_size)
    fail_at(file, "key distributed.learners",
            std::to_string(s.learners) + " learners need at least as many ranks, but the run has " +
                std::to_string(world_size));
  DistRoles roles;
  for (int r = 0; r < world_size; ++r) {
    const bool learner = r < learners;
    if (learner) roles.learners.push_back(r);
    if (!learner || s.rollout_on_learners) roles.rollout.push_back(r);
  }
  if (roles.rollout.empty())
    fail_at(file, "key distributed.rollout_on_learners",
            "every one of the " + std::to_string(world_size) +
                " ranks learns and none rolls out: set it to true or lower distributed.learners");
  return roles;
}

std::pair<int64_t, int64_t> shard_range(int64_t rows, int parts, int index) {
  const int64_t base = rows / parts, extra = rows % parts;
  const int64_t begin = index * base + std::min<int64_t>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

}  // namespace citeforge::trainer
