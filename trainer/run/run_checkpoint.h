// What a run's checkpoints hold beside the training state: the policy's adapters as peft files
// and the trainable tensors read back from a checkpoint directory.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trainer/run/run_context.h"
#include "trainer/run/train_checkpoint.h"

namespace citeforge::trainer {

// The policy's adapters as peft files (adapter_model.safetensors, adapter_config.json), written
// into every checkpoint so `citeforge generate --adapter` and Python peft can use it directly.
std::vector<std::pair<std::string, std::string>> adapter_files(RunPolicy& policy);

// Loads the trainable tensors (adapters, value head) of checkpoint `dir` into `tensors`, after
// verifying the checkpoint's checksums; a tensor the checkpoint lacks is an Error naming it.
void load_trainable(const std::string& dir, NamedTensors tensors);

// An adapter directory (a checkpoint, whose checksums are verified first, or a peft export)
// that holds adapter_model.safetensors; returns `dir`.
std::string verified_adapter_dir(const std::string& dir);
// base_model_name_or_path of the adapter in `adapter_dir`.
std::string adapter_base_model(const std::string& adapter_dir);

}  // namespace citeforge::trainer
