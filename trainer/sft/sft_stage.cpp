#include "trainer/sft/sft_stage.h"

#include <cstdio>

#include "common/error.h"
#include "models/lora.h"
#include "trainer/distributed/dist_run.h"
#include "trainer/eval/evaluate.h"
#include "trainer/run/run_checkpoint.h"
#include "trainer/sft/lm_trainer.h"

namespace citeforge::trainer {
namespace {

// With several ranks, they share every step's micro-batches (LmDataParallel).
void make_data_parallel(LmTrainingJob& job, RunContext& run) {
  if (!run.setup.dist) return;
  DistGroup* group = run.setup.dist->group.get();
  job.data_parallel.rank = group->rank();
  job.data_parallel.world_size = group->world_size();
  job.data_parallel.all_reduce_sum = [group](torch::Tensor& values, const std::string& phase) {
    group->all_reduce_sum(Ranks::world, values, phase);
  };
}

}  // namespace

LmTrainingJob run_training_job(const RunContext& run, const std::string& stage,
                               const TrainSection& config) {
  LmTrainingJob job;
  job.stage = stage;
  job.config = config;
  job.device = run.setup.device;
  job.seed = run.setup.config.seed;
  job.pad_id = run.data.tokenizer->eos_id();
  job.checkpoint_root = run.setup.dir.checkpoints();
  job.log = run.setup.log;
  job.resume = run.setup.config.resume == Resume::automatic;
  return job;
}

void run_sft(RunContext& run) {
  const auto& cfg = run.setup.config.sft;
  models::reset_adapters(run.policy.model, run.setup.config.seed);
  std::vector<data::Example> train = run.data.train;
  if (cfg.max_examples > 0 && int(train.size()) > cfg.max_examples) train.resize(cfg.max_examples);
  auto encoding =
      encode_sft(train, *run.data.tokenizer, run.data.format.chat, run.data.format.prompt,
                 run.setup.config.data.reference, cfg.max_seq_len);
  if (encoding.sequences.empty())
    throw Error(run.setup.config.file + ": data.reference '" + run.setup.config.data.reference +
                "' is not a reference answer of any training example");
  std::fprintf(stderr, "[sft] %zu sequences (%d cut to max_seq_len, %d without '%s')\n",
               encoding.sequences.size(), encoding.truncated, encoding.skipped,
               run.setup.config.data.reference.c_str());
  LmTrainingJob job = run_training_job(run, "sft", cfg);
  job.sequences = &encoding.sequences;
  job.model = run.policy.model;
  job.trainable = models::lora_parameters(run.policy.model);
  job.extra_files = [&] { return adapter_files(run.policy); };
  job.on_epoch_end = [&](int64_t epoch) {
    evaluate_all(run, "sft", int(epoch),
                 RunDir::relative_checkpoint("sft-" + std::to_string(epoch)));
  };
  make_data_parallel(job, run);  // with several ranks, they share every step's micro-batches
  run_lm_training(job);
}

}  // namespace citeforge::trainer
