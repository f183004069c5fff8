// A minimal valid run config, for the config tests to change one key at a time: a model the run
// builds, on a small synthetic world with an in-distribution and an out-of-distribution set.
#pragma once

#include <string>

namespace citeforge::testing {

inline const std::string kMinimalRunConfig = R"(name: t
data:
  synth: {train: 10, validation: 5, test: 5, test_ood: 5}
  train: synth:train
  test_sets:
    - {name: validation, path: "synth:validation"}
    - {name: test_ood, path: "synth:test_ood", ood: true}
model:
  build: {hidden_size: 32, intermediate_size: 64, num_layers: 1, num_heads: 2, num_kv_heads: 1}
  tokenizer_vocab: 300
)";

}  // namespace citeforge::testing
