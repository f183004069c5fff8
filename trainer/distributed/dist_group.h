// The communication of a multi-process run, over LibTorch's own distributed engine (c10d): a
// TCPStore rendezvous hosted by rank 0 (or torchrun's agent), a process group over every rank and
// one over the learners (ProcessGroupGloo on CPUs, ProcessGroupNCCL on GPUs), and the failure
// detection around them. No silent hang: every rank sends a heartbeat to the store from a thread,
// and every collective is entered through a store barrier that, while it waits, watches the
// heartbeats and the shared "abort" key. A rank that died or hung (no heartbeat for
// `timeout`) or that gave up stops all the others with one message naming the rank and the
// phase; a rank that is merely busy (rank 0 evaluating) keeps beating and is waited for.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "trainer/config/config_choices.h"
#include "trainer/distributed/dist_env.h"

namespace citeforge::trainer {

struct DistGroupOptions {
  Backend backend = Backend::gloo;
  std::chrono::milliseconds timeout{300000};
  std::vector<int> learners;           // their own process group when there are several
  torch::Device device = torch::kCPU;  // where NCCL wants the tensors (the rank's GPU)
};

// Cumulative, for the iteration logs and the benchmark.
struct CommStats {
  double wait_s = 0;      // in barriers, waiting for other ranks to arrive
  double transfer_s = 0;  // in collectives, after every rank arrived
  int64_t bytes_broadcast = 0, bytes_gathered = 0, bytes_reduced = 0;  // payload, this rank
};

enum class Ranks { world, learners };

class DistGroup {
 public:
  // Rendezvous at env.master_addr:master_port (rank 0 hosts the store) and the process groups;
  // an Error naming the rank, the address and the timeout when the others do not show up.
  DistGroup(const DistEnv& env, const DistGroupOptions& options);
  ~DistGroup();
  DistGroup(const DistGroup&) = delete;
  DistGroup& operator=(const DistGroup&) = delete;

  int rank() const;
  int world_size() const;
  const DistEnv& env() const;

  // Every rank of `ranks` waits for the others; `phase` names the wait in messages.
  void barrier(Ranks ranks, const std::string& phase);
  // In-place sum over `ranks` (the caller must be one of them).
  void all_reduce_sum(Ranks ranks, torch::Tensor& tensor, const std::string& phase);
  // In-place broadcast of `tensor` from `root` to every rank (same shape and dtype everywhere).
  void broadcast(torch::Tensor& tensor, int root, const std::string& phase);
  // Every rank's `mine`, indexed by rank (any sizes).
  std::vector<std::string> all_gather_bytes(const std::string& mine, const std::string& phase);

  // Tells the other ranks that this one gives up (e.g. on an error of its own), so they stop
  // at their next wait with `reason` instead of waiting for a timeout. Never throws.
  void abort(const std::string& reason) noexcept;
  // Orderly end of a successful run: a last barrier, then rank 0 (the store's host) leaves last.
  void finish();

  const CommStats& stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace citeforge::trainer
