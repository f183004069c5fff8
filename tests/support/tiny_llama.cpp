#include "tests/support/tiny_llama.h"

#include "models/lora.h"
#include "models/model_init.h"

namespace citeforge::testing {

models::ModelConfig tiny_llama_config(int64_t vocab_size) {
  models::ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.max_positions = 64;
  c.vocab_size = vocab_size;
  return c;
}

models::LlamaForCausalLM adapted_tiny_llama() {
  auto model = models::init_random_model(tiny_llama_config(64), 5, 0.1);
  models::LoraConfig lora;
  lora.spec = {4, 8.0, 0.0};
  models::attach_lora(model, lora);
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : models::lora_parameters(model)) t.normal_(0, 0.1);
  }
  model->train();
  return model;
}

}  // namespace citeforge::testing
