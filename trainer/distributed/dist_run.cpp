#include "trainer/distributed/dist_run.h"

#include <cstdio>

#include "common/error.h"

#ifdef CITEFORGE_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace citeforge::trainer {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return "[" + text + "]";
}

}  // namespace

std::unique_ptr<DistRun> start_distributed(const RunConfig& config) {
  const DistEnv env = read_dist_env();
  // A world of one takes the distributed path only when asked to (a `distributed` section), so
  // that one GPU exercises the code several use; otherwise it is the plain single process.
  if (env.source.empty() || (env.world_size == 1 && !config.distributed_enabled)) return nullptr;
  auto run = std::make_unique<DistRun>();
  run->roles = assign_roles(config.distributed, env.world_size, config.file);
  const auto& roles = run->roles;
  const auto& ppo = config.ppo;
  if (ppo.batch_size < int(roles.rollout.size()))
    fail_at(config.file, "key ppo.batch_size",
            std::to_string(ppo.batch_size) + " prompts cannot keep " +
                std::to_string(roles.rollout.size()) + " rollout ranks busy");
  if (ppo.minibatch_size < int(roles.learners.size()))
    fail_at(config.file, "key ppo.minibatch_size",
            "each of the " + std::to_string(roles.learners.size()) +
                " learners needs at least one row of every minibatch; got " +
                std::to_string(ppo.minibatch_size));
  DistGroupOptions options;
  options.backend = config.distributed.backend;
  options.timeout = std::chrono::milliseconds(int64_t(config.distributed.timeout_s * 1000));
  options.learners = roles.learners;
  if (config.device == Device::cuda) {
#ifdef CITEFORGE_WITH_CUDA
    c10::cuda::set_device(c10::DeviceIndex(env.local_rank));
    options.device = torch::Device(torch::kCUDA, c10::DeviceIndex(env.local_rank));
#endif
  }
  if (env.rank == 0)
    std::fprintf(stderr,
                 "[dist] %d ranks (%s environment) over %s, rendezvous at %s:%d; learners %s, "
                 "rollout %s\n",
                 env.world_size, env.source.c_str(), choice_name(options.backend),
                 env.master_addr.c_str(), env.master_port, rank_list(roles.learners).c_str(),
                 rank_list(roles.rollout).c_str());
  run->group = std::make_unique<DistGroup>(env, options);
  return run;
}

bool is_lead(const RunSetup& setup) {
  return !setup.dist || setup.dist->lead();
}

void sync_ranks(const RunSetup& setup, const std::string& phase) {
  if (setup.dist) setup.dist->group->barrier(Ranks::world, phase);
}

void lead_first(const RunSetup& setup, const std::string& phase,
                const std::function<void()>& step) {
  if (is_lead(setup)) step();
  sync_ranks(setup, phase);
  if (!is_lead(setup)) step();
}

}  // namespace citeforge::trainer
