#include "models/kv_cache.h"

namespace citeforge::models {

KVCache make_kv_cache(const ModelConfig& config, int64_t batch, int64_t capacity,
                      const torch::TensorOptions& options) {
  KVCache cache;
  for (int64_t i = 0; i < config.num_layers; ++i) {
    cache.keys.push_back(
        torch::zeros({batch, config.num_kv_heads, capacity, config.head_dim}, options));
    cache.values.push_back(
        torch::zeros({batch, config.num_kv_heads, capacity, config.head_dim}, options));
  }
  return cache;
}

KVCache growing_kv_cache(const ModelConfig& config) {
  KVCache cache;
  cache.keys.resize(size_t(config.num_layers));
  cache.values.resize(size_t(config.num_layers));
  cache.grows = true;
  return cache;
}

}  // namespace citeforge::models
