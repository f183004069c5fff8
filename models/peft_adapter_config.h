// A peft adapter's adapter_config.json, read and checked without LibTorch (so the fuzzer in
// tests/fuzz/ runs what load_peft_adapter runs): LoRA only, with the features citeforge does not
// implement (DoRA, rsLoRA, Conv1D layers, biases, per-module ranks, extra trained modules)
// refused by name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace citeforge::models {

struct PeftAdapterSettings {
  int64_t r = 0;
  double alpha = 8.0;
  double dropout = 0.0;
  std::vector<std::string> target_modules = {"all-linear"};
  std::string base_model;  // base_model_name_or_path
};

// `text` is the file's content, `path` names it in errors: one line naming the field.
PeftAdapterSettings parse_peft_adapter_config(const std::string& text, const std::string& path);

}  // namespace citeforge::models
