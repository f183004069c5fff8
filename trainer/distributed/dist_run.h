// A multi-process run as the pipeline's stages see it: the process group, the roles, and the
// rule for the steps that make files (data, tokenizer, base model, evaluation archives, tables):
// rank 0 makes them while the others wait, then the others read what rank 0 made. Rank 0 alone
// writes checkpoints, metrics, evaluations and tables, so nothing is done twice.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "trainer/config/run_config.h"
#include "trainer/distributed/dist_env.h"
#include "trainer/distributed/dist_group.h"
#include "trainer/run/run_context.h"

namespace citeforge::trainer {

struct DistRun {
  std::unique_ptr<DistGroup> group;
  DistRoles roles;
  int rank() const { return group->rank(); }
  bool lead() const { return group->rank() == 0; }
};

// Joins the other ranks when the environment says this process is one of several
// (trainer/distributed/dist_env.h), or one of one with a `distributed` section; nullptr for a
// single process. Checks the roles against the config (errors name the key) and puts a CUDA rank on
// its own GPU (LOCAL_RANK).
std::unique_ptr<DistRun> start_distributed(const RunConfig& config);

// True for a single process and for rank 0 of several.
bool is_lead(const RunSetup& setup);

// Every rank waits for the others; nothing for a single process.
void sync_ranks(const RunSetup& setup, const std::string& phase);

// Rank 0 runs `step`, the others wait, then run `step` themselves and find its work done.
void lead_first(const RunSetup& setup, const std::string& phase, const std::function<void()>& step);

}  // namespace citeforge::trainer
