#include "models/model_init.h"

namespace citeforge::models {

LlamaForCausalLM init_random_model(const ModelConfig& config, uint64_t seed, double std) {
  torch::manual_seed(seed);
  LlamaForCausalLM model(config);
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) {
    auto& p = item.value();
    if (item.key().find("norm") != std::string::npos)
      p.fill_(1.0);
    else
      p.normal_(0.0, std);
  }
  return model;
}

}  // namespace citeforge::models
