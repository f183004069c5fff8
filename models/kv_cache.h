// Keys and values of past positions, per layer, preallocated to a fixed capacity so decoding a
// token writes in place instead of re-concatenating the whole history.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "models/hf_config.h"

namespace citeforge::models {

struct KVCache {
  std::vector<torch::Tensor> keys;    // per layer [batch, kv_heads, capacity, head_dim]
  std::vector<torch::Tensor> values;  // same shape
  int64_t length = 0;                 // slots filled so far (the same for every row)

  int64_t capacity() const { return keys.empty() ? 0 : keys[0].size(2); }
};

KVCache make_kv_cache(const ModelConfig& config, int64_t batch, int64_t capacity,
                      const torch::TensorOptions& options);

}  // namespace citeforge::models
