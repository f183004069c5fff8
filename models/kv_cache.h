// Keys and values of past positions, per layer, preallocated to a fixed capacity so decoding a
// token writes in place instead of re-concatenating the whole history; or, for a pass that
// trains (models/shared_prefix_states.h), grown by concatenation, which autograd can follow.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "models/hf_config.h"

namespace citeforge::models {

struct KVCache {
  std::vector<torch::Tensor> keys;    // per layer [batch, kv_heads, capacity, head_dim]
  std::vector<torch::Tensor> values;  // same shape
  int64_t length = 0;                 // slots filled so far (the same for every row)
  // Each pass's keys and values are concatenated after those before (a batch of one row before
  // is expanded to the pass's rows) instead of written into preallocated slots: no capacity, and
  // gradients flow back through them.
  bool grows = false;

  int64_t capacity() const { return keys.empty() || !keys[0].defined() ? 0 : keys[0].size(2); }
};

KVCache make_kv_cache(const ModelConfig& config, int64_t batch, int64_t capacity,
                      const torch::TensorOptions& options);

// An empty cache that grows (see KVCache::grows).
KVCache growing_kv_cache(const ModelConfig& config);

}  // namespace citeforge::models
