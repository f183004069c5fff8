// The gradient-descent loop shared by language-model pre-training and SFT: length-bucketed
// micro-batches, next-token cross-entropy on the masked tokens, gradient accumulation to an
// effective batch, AdamW, warm-up then constant or cosine LR, gradient-norm clipping, progress
// and metrics.jsonl, checkpoints every N steps and every epoch, and resume. On CPU a run killed
// and resumed from its last checkpoint ends bit-identical to an uninterrupted one: the batch
// order is a function of (seed, epoch), and the optimiser and RNG states are checkpointed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/llama.h"
#include "trainer/config/run_config.h"
#include "trainer/distributed/gradient_sum.h"
#include "trainer/run/run_log.h"
#include "trainer/run/train_checkpoint.h"
#include "trainer/sft/lm_data.h"

namespace citeforge::trainer {

// Data parallelism over several processes (trainer/distributed/dist_run.h sets it): every optimiser
// step's micro-batches are dealt round-robin to the ranks, and `all_reduce_sum` adds the ranks'
// gradients (and losses) up before the step, so every rank takes the same step on the same
// effective batch. Dropout is seeded per micro-batch, so a micro-batch draws the same mask on
// whichever rank trains it. Only rank 0 writes checkpoints and metrics and runs on_epoch_end.
struct LmDataParallel {
  int rank = 0;
  int world_size = 1;  // 1: off
  ReduceSum all_reduce_sum;
};

struct LmTrainingJob {
  std::string stage;  // "pretrain" or "sft": names checkpoints and metrics records
  TrainSection config;
  const std::vector<TokenSequence>* sequences = nullptr;
  models::LlamaForCausalLM model{nullptr};
  NamedTensors trainable;  // the parameters to optimise, by name
  torch::Device device = torch::kCPU;
  uint64_t seed = 1;
  int64_t pad_id = 0;
  std::string checkpoint_root;  // <run>/checkpoints
  RunLog log;                   // <run>/metrics.jsonl and TensorBoard
  bool resume = true;
  // Called after each epoch's checkpoint is written (with the 1-based epoch), e.g. to evaluate.
  // Also called on resume for the last completed epoch, so it must skip work already done.
  std::function<void(int64_t epoch)> on_epoch_end;
  // Extra files written into every checkpoint (e.g. peft adapter files).
  std::function<std::vector<std::pair<std::string, std::string>>()> extra_files;
  LmDataParallel data_parallel;
};

struct LmTrainingResult {
  int64_t steps = 0;
  double final_loss = 0;  // mean loss of the last logged window
  bool resumed = false;
};

LmTrainingResult run_lm_training(LmTrainingJob& job);

// LR multiplier at optimiser step `step` (0-based) of `total`: linear warm-up, then constant or
// a cosine decay to 0.
double lr_factor(int64_t step, int64_t total, int64_t warmup, TrainSchedule schedule);

// Sum of token cross-entropies of `batch` under `model`. With `share_prompt_prefix` on a CPU,
// the leading tokens all rows share and none trains on (at least 16 of them) go through the
// model once (models::hidden_states_after_shared_prefix): the same loss and gradients up to
// rounding (and, with adapter dropout, one mask for the shared tokens of all rows).
torch::Tensor masked_lm_loss_sum(models::LlamaForCausalLM& model, const Batch& batch,
                                 bool share_prompt_prefix = false);

// How many leading tokens every row of `batch` has in common before any row's first trained
// prediction (at most T - 1, so that a position is left to predict from).
int64_t untrained_shared_prefix(const Batch& batch);

}  // namespace citeforge::trainer
