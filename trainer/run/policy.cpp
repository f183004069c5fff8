#include "trainer/run/policy.h"

#include "models/checkpoint_io.h"
#include "models/lora.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {

void load_policy(RunContext& run) {
  models::LoadOptions load;
  load.dtype = run.dtype;
  load.device = run.device;
  load.nf4 = run.config.model.quantization == Quantization::nf4;
  run.model = models::load_model(run.base_model_dir, load);
  torch::manual_seed(run.config.seed);
  run.lora.spec = {run.config.lora.r, run.config.lora.alpha, run.config.lora.dropout};
  run.lora.target_modules = run.config.lora.target_modules;
  auto adapted = models::attach_lora(run.model, run.lora);
  int64_t trainable = 0, total = 0;
  for (auto& p : run.model->parameters()) {
    total += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  say(std::string("policy: ") + (load.nf4 ? "NF4" : "dense") + " base, " +
      std::to_string(adapted.size()) + " LoRA-adapted layers (r " +
      std::to_string(run.lora.spec.r) + "), " + std::to_string(trainable) + " trainable of " +
      std::to_string(total) + " parameters");
}

}  // namespace citeforge::trainer
