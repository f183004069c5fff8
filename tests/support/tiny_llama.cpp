#include "tests/support/tiny_llama.h"

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

}  // namespace citeforge::testing
