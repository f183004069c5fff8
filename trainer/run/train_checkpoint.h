// Resumable training checkpoints. A checkpoint is a directory written under a temporary name,
// every file fsynced, a CRC-32 per file recorded in checksums.json, then renamed into place, so
// a run killed at any moment leaves either the previous checkpoint or the new one, never a torn
// one. Loading verifies every checksum and names the file that does not match.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "models/safetensors.h"

namespace citeforge::trainer {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

struct TrainingState {
  std::string stage;         // "pretrain", "sft", "ppo", "sft+ppo"
  int64_t epoch = 0;         // 1-based epoch in progress (or just finished)
  int64_t batches_done = 0;  // micro-batches of `epoch` already trained
  int64_t global_step = 0;   // optimiser steps so far
  bool epoch_complete = false;
  nlohmann::json extra = nlohmann::json::object();  // stage-specific (PPO's KL controller, ...)
};

struct CheckpointContents {
  TrainingState state;
  NamedTensors tensors;  // what trains (adapters, value head, or all weights)
  // AdamW state (step, moments) saved per tensor name, so the file is deterministic and
  // independent of where tensors live in memory (torch::save keys it by address).
  torch::optim::Optimizer* optimizer = nullptr;
};

// Writes `dir` atomically (replacing an older checkpoint of the same name). Also saves the
// CPU's random generator and that of every GPU the trained tensors live on, so dropout
// continues the same stream after a resume, on a CPU or a GPU.
// `extra_files` are (name, bytes) written alongside (e.g. peft adapter files).
void save_checkpoint(const std::string& dir, const CheckpointContents& contents,
                     const std::vector<std::pair<std::string, std::string>>& extra_files = {});

// Verifies checksums, copies the saved tensors into `contents.tensors` (by name: missing or
// misshaped ones are errors naming the tensor), restores the optimizer and the generators,
// and returns the saved state.
TrainingState load_checkpoint(const std::string& dir, CheckpointContents& contents);

// Throws Error naming the file when a checksum does not match or a file is missing.
void verify_checkpoint(const std::string& dir);

// AdamW's per-parameter state as named tensors ("<name>.step", ".exp_avg", ".exp_avg_sq"),
// and its inverse, which replaces the optimiser's state (an Error for other optimisers).
NamedTensors adamw_state(torch::optim::Optimizer& optimizer, const NamedTensors& params);
void load_adamw_state(torch::optim::Optimizer& optimizer, const NamedTensors& params,
                      const models::SafetensorsCheckpoint& saved);

// CRC-32 (zlib) of a file's bytes, as 8 hex digits.
std::string file_crc32(const std::string& path);

}  // namespace citeforge::trainer
