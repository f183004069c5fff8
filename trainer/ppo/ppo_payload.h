// What distributed PPO moves between ranks: a rollout rank's shard of the iteration's
// trajectories (tokens, log-probabilities, rewards; the learner rebuilds the masks from the
// lengths) as bytes, and the trainable weights (LoRA adapters and value head, never the frozen
// base) as one flat tensor.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "trainer/ppo/ppo_rollout.h"

namespace citeforge::trainer {

struct TrajectoryShard {
  int64_t first_row = 0;  // where the shard's first example sits in the iteration's batch
  Trajectories trajectories;
};

// A self-describing little-endian byte string, and its inverse; malformed bytes are an Error
// naming `what` (e.g. "trajectories of rank 2").
std::string encode_shard(const TrajectoryShard& shard);
TrajectoryShard decode_shard(const std::string& bytes, const std::string& what);

// The iteration's batch of `rows` from its shards in row order. Missing or overlapping rows, or
// a shard produced by other weights than `policy_version`, are an Error: PPO's update must see
// exactly one batch, sampled by exactly one policy.
Trajectories join_shards(std::vector<TrajectoryShard> shards, int64_t rows, int64_t policy_version);

// The trainable tensors as one fp32 CPU vector (in `params` order), and its inverse.
torch::Tensor flatten_weights(const std::vector<torch::Tensor>& params);
void assign_weights(const std::vector<torch::Tensor>& params, const torch::Tensor& flat);

}  // namespace citeforge::trainer
