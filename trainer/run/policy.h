// The policy a run trains: its base model loaded in the run's dtype on its device (its decoder
// blocks quantised to NF4 for QLoRA) with fresh LoRA adapters attached, seeded by the run.
#pragma once

#include "trainer/run/run_context.h"

namespace citeforge::trainer {

// The frozen base of a policy, for runs and commands alike: the HF directory `dir` in `dtype`
// on `device`, its decoder blocks' projections quantised to NF4 when asked (QLoRA).
models::LlamaForCausalLM load_base(const std::string& dir, Dtype dtype, Quantization quantization,
                                   torch::Device device = torch::kCPU,
                                   NonFiniteWeights non_finite = NonFiniteWeights::error);

// Sets run.policy.model (load_base with fresh adapters) and run.policy.lora from
// run.policy.base_model_dir and the config, and says what it built.
void load_policy(const RunSetup& setup, RunPolicy& policy);

}  // namespace citeforge::trainer
