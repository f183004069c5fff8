#include "trainer/sft/lm_trainer.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fault.h"
#include "common/file_io.h"
#include "data/random.h"
#include "models/generate.h"
#include "models/shared_prefix_states.h"
#include "trainer/distributed/gradient_sum.h"
#include "trainer/run/out_of_memory.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

double lr_factor(int64_t step, int64_t total, int64_t warmup, TrainSchedule schedule) {
  if (step < warmup) return double(step + 1) / double(warmup);
  if (schedule == TrainSchedule::cosine && total > warmup) {
    const double progress = double(step - warmup) / double(total - warmup);
    return 0.5 * (1.0 + std::cos(M_PI * progress));
  }
  return 1.0;
}

int64_t untrained_shared_prefix(const Batch& batch) {
  const auto ids = batch.ids.cpu();
  const int64_t T = ids.size(1);
  // Positions where every row has row 0's token, and positions whose prediction trains in a row.
  // Read through accessors: a tensor indexed per position would be two operators a token.
  const auto same_tensor = ids.eq(ids.narrow(0, 0, 1)).all(0);
  const auto trained_tensor = batch.mask.cpu().gt(0).any(0);
  const auto same = same_tensor.accessor<bool, 1>();
  const auto trained = trained_tensor.accessor<bool, 1>();
  int64_t shared = 0;
  while (shared < T - 1 && same[shared] && !trained[shared]) ++shared;
  return shared;
}

// Logits are computed only where the loss counts (the answer tokens in SFT): with a large
// vocabulary the LM head over every prompt position would cost more than it is worth.
torch::Tensor masked_lm_loss_sum(models::LlamaForCausalLM& model, const Batch& batch,
                                 bool share_prompt_prefix) {
  const int64_t B = batch.ids.size(0), T = batch.ids.size(1);
  // On a CPU, where the linear layers' time is their tokens' share; a GPU keeps the padded
  // pass, which there stays in its fused attention kernel. A start under kMinSharedTokens is
  // left alone: a pre-training batch's rows share only BOS, so its numerics stay as they were.
  constexpr int64_t kMinSharedTokens = 16;
  int64_t shared = 0;
  if (share_prompt_prefix && batch.ids.device().is_cpu() && !model->gradient_checkpointing &&
      models::can_share_prompt_prefix(model->config, B))
    shared = untrained_shared_prefix(batch);
  if (shared < kMinSharedTokens) shared = 0;
  // States of the prediction positions shared .. T-2 (each predicts the token after it).
  auto hidden = shared > 0 ? models::hidden_states_after_shared_prefix(model, batch.ids, shared)
                           : model->hidden_states(batch.ids);  // [B, T - shared, H]
  const int64_t predicted = T - 1 - shared;
  auto states = hidden.narrow(1, 0, predicted).reshape({-1, hidden.size(-1)});
  auto mask = batch.mask.narrow(1, shared, predicted).reshape({-1});
  auto where = mask.nonzero().squeeze(1);
  auto logits = model->logits(states.index_select(0, where)).to(torch::kFloat32);
  auto nll = torch::nn::functional::cross_entropy(
      logits, batch.targets.narrow(1, shared, predicted).reshape({-1}).index_select(0, where),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  return (nll * mask.index_select(0, where)).sum();
}

namespace {

// Where a stage continues: after its last checkpoint, or from the start.
struct ResumePoint {
  int64_t start_epoch = 1, skip_batches = 0, global_step = 0;
  bool resumed = false;
};

ResumePoint resume_training(const LmTrainingJob& job, CheckpointContents& contents,
                            const std::string& last_dir, bool lead) {
  ResumePoint point;
  if (!job.resume || !fs::exists(last_dir)) return point;
  TrainingState s = load_checkpoint(last_dir, contents);
  point.resumed = true;
  point.global_step = s.global_step;
  if (s.epoch_complete) {
    point.start_epoch = s.epoch + 1;
    // Its evaluation may not have finished.
    if (job.on_epoch_end && lead) job.on_epoch_end(s.epoch);
  } else {
    point.start_epoch = s.epoch;
    point.skip_batches = s.batches_done;
  }
  if (lead) {
    std::fprintf(stderr, "[%s] resuming from %s: epoch %lld, %lld micro-batches done, step %lld\n",
                 job.stage.c_str(), last_dir.c_str(), (long long)s.epoch, (long long)s.batches_done,
                 (long long)s.global_step);
    log_resume(
        job.log,
        nlohmann::json{
            {"stage", job.stage}, {"event", "resume"}, {"epoch", s.epoch}, {"step", s.global_step}},
        s.global_step + 1);
  }
  return point;
}

struct StepTotals {
  double loss = 0, real_tokens = 0;
};

// One optimiser step's forward and backward passes over this rank's micro-batches (with
// several ranks, their gradients and totals summed over the ranks).
StepTotals forward_backward(LmTrainingJob& job, std::vector<Batch>& step_batches,
                            const std::vector<torch::Tensor>& params, int64_t epoch, int64_t first,
                            int64_t global_step, int64_t step_tokens) {
  const auto& dp = job.data_parallel;
  StepTotals totals;
  for (size_t i = 0; i < step_batches.size(); ++i) {
    if (int(i % size_t(dp.world_size)) != dp.rank) continue;  // another rank's share
    if (dp.world_size > 1)
      torch::manual_seed(data::derive_seed(job.seed, job.stage + "/dropout/" +
                                                         std::to_string(epoch) + "/" +
                                                         std::to_string(first + int64_t(i))));
    auto& batch = step_batches[i];
    auto describe = [&] {
      return job.stage + " epoch " + std::to_string(epoch) + " step " +
             std::to_string(global_step + 1) + ": a micro-batch of " +
             std::to_string(batch.ids.size(0)) + " sequences x " +
             std::to_string(batch.ids.size(1)) + " tokens";
    };
    auto loss = naming_out_of_memory(describe, [&] {
      maybe_out_of_memory_at(job.stage, global_step + 1);
      auto loss = masked_lm_loss_sum(job.model, batch, job.config.share_prompt_prefix) /
                  double(step_tokens);
      if (nan_injected_at(job.stage, global_step + 1)) loss = loss * std::nan("");
      loss.backward();
      return loss;
    });
    totals.loss += loss.item<double>();
    totals.real_tokens += double(batch.tokens);
  }
  if (dp.world_size > 1) {
    std::vector<double> sums{totals.loss, totals.real_tokens};
    all_reduce_gradients(params, sums, dp.all_reduce_sum,
                         job.stage + " step " + std::to_string(global_step + 1) + ": gradients");
    totals = {sums[0], sums[1]};
  }
  return totals;
}

// The steps since the last log line: their loss, trained and real tokens, and start time.
struct LogWindow {
  double loss = 0, tokens = 0, real_tokens = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// Writes the window's record to metrics.jsonl and the progress line, starts a new window, and
// returns the window's mean loss.
double log_window(const LmTrainingJob& job, LogWindow& w, int64_t epoch, int64_t global_step,
                  double lr, double grad_norm, Progress& progress) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - w.start).count();
  const double mean_loss = w.loss / w.tokens;
  const double tps = w.real_tokens / std::max(seconds, 1e-9);
  log_record(job.log, nlohmann::json{{"stage", job.stage},
                                     {"epoch", epoch},
                                     {"step", global_step},
                                     {"loss", mean_loss},
                                     {"lr", lr},
                                     {"grad_norm", grad_norm},
                                     {"tokens_per_s", tps},
                                     {"elapsed_s", progress.elapsed_seconds()}});
  char status[160];
  std::snprintf(status, sizeof status, "epoch %lld/%d  loss %.4f  lr %.2e  %.0f tok/s",
                (long long)epoch, job.config.epochs, mean_loss, lr, tps);
  progress.update(global_step, status);
  w = LogWindow{};
  return mean_loss;
}

}  // namespace

LmTrainingResult run_lm_training(LmTrainingJob& job) {
  const auto& cfg = job.config;
  const auto& dp = job.data_parallel;
  const bool lead = dp.rank == 0;  // writes checkpoints and metrics
  const auto& sequences = *job.sequences;
  if (sequences.empty()) throw Error(job.stage + ": no training sequences");
  std::vector<torch::Tensor> params;
  for (auto& [name, p] : job.trainable) params.push_back(p);
  torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(cfg.lr)
                                            .betas({cfg.beta1, cfg.beta2})
                                            .eps(cfg.adam_eps)
                                            .weight_decay(cfg.weight_decay));
  const int64_t batches_per_epoch =
      (int64_t(sequences.size()) + cfg.batch_size - 1) / cfg.batch_size;
  const int64_t steps_per_epoch = (batches_per_epoch + cfg.grad_accum - 1) / cfg.grad_accum;
  const int64_t total_steps = steps_per_epoch * cfg.epochs;
  const int64_t warmup = int64_t(std::ceil(cfg.warmup_ratio * double(total_steps)));

  CheckpointContents contents{{}, job.trainable, &optimizer};
  contents.state.stage = job.stage;
  const std::string last_dir = (fs::path(job.checkpoint_root) / (job.stage + "-last")).string();
  LmTrainingResult result;
  const ResumePoint resumed = resume_training(job, contents, last_dir, lead);
  result.resumed = resumed.resumed;
  int64_t skip_batches = resumed.skip_batches, global_step = resumed.global_step;
  const int64_t resumed_step = resumed.global_step;

  auto save = [&](const std::string& dir, int64_t epoch, int64_t batches_done, bool complete) {
    if (!lead) return;
    contents.state.epoch = epoch;
    contents.state.batches_done = batches_done;
    contents.state.global_step = global_step;
    contents.state.epoch_complete = complete;
    std::vector<std::pair<std::string, std::string>> extra;
    if (job.extra_files) extra = job.extra_files();
    save_checkpoint(dir, contents, extra);
  };

  job.model->train();
  job.model->gradient_checkpointing = cfg.gradient_checkpointing;
  Progress progress(job.stage, total_steps);
  LogWindow window;
  for (int64_t epoch = resumed.start_epoch; epoch <= cfg.epochs; ++epoch) {
    auto batches = epoch_batches(sequences, cfg.batch_size, job.seed, epoch);
    for (int64_t first = skip_batches; first < batches_per_epoch; first += cfg.grad_accum) {
      const int64_t last = std::min(batches_per_epoch, first + cfg.grad_accum);
      std::vector<Batch> step_batches;
      int64_t step_tokens = 0;
      for (int64_t b = first; b < last; ++b) {
        step_batches.push_back(collate(sequences, batches[b], job.pad_id, job.device));
        step_tokens += step_batches.back().trained_tokens;
      }
      if (step_tokens == 0) continue;
      optimizer.zero_grad();
      const StepTotals step =
          forward_backward(job, step_batches, params, epoch, first, global_step, step_tokens);
      window.real_tokens += step.real_tokens;
      if (!std::isfinite(step.loss))
        throw Error(job.stage + ": non-finite loss at epoch " + std::to_string(epoch) + ", step " +
                    std::to_string(global_step + 1) + "; the last checkpoint (" + last_dir +
                    ") is intact");
      double grad_norm = 0;
      if (cfg.max_grad_norm > 0)
        grad_norm = torch::nn::utils::clip_grad_norm_(params, cfg.max_grad_norm);
      const double lr = cfg.lr * lr_factor(global_step, total_steps, warmup, cfg.schedule);
      for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
      optimizer.step();
      ++global_step;
      window.loss += step.loss * double(step_tokens);
      window.tokens += double(step_tokens);
      if (lead && (global_step % cfg.log_every == 0 || last == batches_per_epoch))
        result.final_loss = log_window(job, window, epoch, global_step, lr, grad_norm, progress);
      if (cfg.checkpoint_every > 0 && global_step % cfg.checkpoint_every == 0 &&
          last < batches_per_epoch)
        save(last_dir, epoch, last, false);
      maybe_kill_at(job.stage, global_step);
    }
    skip_batches = 0;
    save((fs::path(job.checkpoint_root) / (job.stage + "-" + std::to_string(epoch))).string(),
         epoch, batches_per_epoch, true);
    save(last_dir, epoch, batches_per_epoch, true);
    if (job.on_epoch_end && lead) {
      job.model->eval();
      job.on_epoch_end(epoch);
      job.model->train();
    }
  }
  job.model->eval();
  job.model->gradient_checkpointing = false;
  char status[64];
  std::snprintf(status, sizeof status, "final loss %.4f", result.final_loss);
  // A resumed run passes through stages it finished before; it has no loss of its own to show.
  progress.finish(global_step > resumed_step ? status : "finished before this resume");
  result.steps = global_step;
  return result;
}

}  // namespace citeforge::trainer
