#include "trainer/run/policy.h"

#include "models/checkpoint_io.h"
#include "models/lora.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {

models::LlamaForCausalLM load_base(const std::string& dir, Dtype dtype, Quantization quantization,
                                   torch::Device device, NonFiniteWeights non_finite) {
  models::LoadOptions load;
  load.dtype = dtype == Dtype::bfloat16 ? torch::kBFloat16 : torch::kFloat32;
  load.device = device;
  load.nf4 = quantization == Quantization::nf4;
  load.non_finite = non_finite;
  return models::load_model(dir, load);
}

void load_policy(const RunSetup& setup, RunPolicy& policy) {
  const auto& m = setup.config.model;
  policy.model =
      load_base(policy.base_model_dir, m.dtype, m.quantization, setup.device, m.non_finite_weights);
  const bool nf4 = m.quantization == Quantization::nf4;
  torch::manual_seed(setup.config.seed);
  policy.lora.spec = {setup.config.lora.r, setup.config.lora.alpha, setup.config.lora.dropout};
  policy.lora.target_modules = setup.config.lora.target_modules;
  auto adapted = models::attach_lora(policy.model, policy.lora);
  int64_t trainable = 0, total = 0;
  for (auto& p : policy.model->parameters()) {
    total += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  say(std::string("policy: ") + (nf4 ? "NF4" : "dense") + " base, " +
      std::to_string(adapted.size()) + " LoRA-adapted layers (r " +
      std::to_string(policy.lora.spec.r) + "), " + std::to_string(trainable) + " trainable of " +
      std::to_string(total) + " parameters");
}

}  // namespace citeforge::trainer
