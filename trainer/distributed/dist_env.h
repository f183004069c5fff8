// Who this process is in a multi-process run, read from the variables that torchrun and
// `citeforge launch` set (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), with SLURM's
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID) as the fallback for `srun`; and which ranks learn
// and which roll out, from the config's `distributed` section.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trainer/config/run_config.h"

namespace citeforge::trainer {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;  // where rank 0 hosts the rendezvous store
  int master_port = 0;
  std::string source;  // "torchrun" (the RANK family) or "slurm"; empty for one process
};

using EnvLookup = std::function<const char*(const char*)>;

// Reads the environment through `lookup` (std::getenv by default). Without RANK/WORLD_SIZE and
// SLURM_PROCID/SLURM_NTASKS the process is alone (world size 1, no source); a world of one rank
// with MASTER_ADDR/MASTER_PORT keeps its source, so a single GPU can run the distributed path.
// Missing or malformed variables of a multi-process start are an Error naming the variable.
DistEnv read_dist_env(const EnvLookup& lookup = {});

struct DistRoles {
  std::vector<int> learners;  // ranks that run the PPO update; learners[0] == 0
  std::vector<int> rollout;   // ranks that generate, in the order their shards are laid out
  bool is_learner(int rank) const;
  // Position of `rank` among the rollout ranks, or -1.
  int rollout_index(int rank) const;
};

// The roles of every rank of a `world_size` run; an Error naming the key when the section asks
// for more learners than there are ranks or leaves no rank to roll out.
DistRoles assign_roles(const DistributedSection& section, int world_size,
                       const std::string& file = "");

// Rows [begin, end) of a batch of `rows` that part `index` of `parts` owns: contiguous, sizes
// differ by at most one, earlier parts take the larger share.
std::pair<int64_t, int64_t> shard_range(int64_t rows, int parts, int index);

}  // namespace citeforge::trainer
