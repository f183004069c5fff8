#include "trainer/stages.h"

#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"
#include "models/lora.h"
#include "models/peft_adapter.h"
#include "models/safetensors.h"
#include "trainer/dist_run.h"
#include "trainer/lm_trainer.h"
#include "trainer/ppo_stage.h"
#include "trainer/results.h"
#include "trainer/selection.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

void load_trainable(RunContext& run, const std::string& dir, NamedTensors tensors) {
  CheckpointContents contents{{}, std::move(tensors), nullptr};
  verify_checkpoint(dir);
  auto saved = models::open_safetensors((fs::path(dir) / "trainable.safetensors").string());
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : contents.tensors) {
    if (!saved.contains(name))
      fail_at(dir + "/trainable.safetensors", "tensor '" + name + "'", "missing");
    tensor.copy_(saved.get(name));
  }
  (void)run;
}

std::vector<std::pair<std::string, std::string>> adapter_files(RunContext& run) {
  return models::peft_adapter_files(run.model, run.lora, fs::absolute(run.base_model_dir).string());
}

void run_sft(RunContext& run) {
  const auto& cfg = run.config.sft;
  reset_adapters(run.model, run.config.seed);
  std::vector<data::Example> train = run.train;
  if (cfg.max_examples > 0 && int(train.size()) > cfg.max_examples) train.resize(cfg.max_examples);
  auto encoding = encode_sft(train, *run.tokenizer, run.format.chat, run.format.prompt,
                             run.config.data.reference, cfg.max_seq_len);
  if (encoding.sequences.empty())
    throw Error(run.config.file + ": data.reference '" + run.config.data.reference +
                "' is not a reference answer of any training example");
  std::fprintf(stderr, "[sft] %zu sequences (%d cut to max_seq_len, %d without '%s')\n",
               encoding.sequences.size(), encoding.truncated, encoding.skipped,
               run.config.data.reference.c_str());
  LmTrainingJob job;
  job.stage = "sft";
  job.config = cfg;
  job.sequences = &encoding.sequences;
  job.model = run.model;
  job.trainable = models::lora_parameters(run.model);
  job.device = run.device;
  job.seed = run.config.seed;
  job.pad_id = run.tokenizer->eos_id();
  job.checkpoint_root = run.checkpoint_root();
  job.metrics_path = run.metrics_path();
  job.resume = run.config.resume == "auto";
  job.extra_files = [&] { return adapter_files(run); };
  job.on_epoch_end = [&](int64_t epoch) {
    evaluate_all(run, "sft", int(epoch), "checkpoints/sft-" + std::to_string(epoch));
  };
  make_data_parallel(job, run);  // with several ranks, they share every step's micro-batches
  run_lm_training(job);
}

void run_setting(RunContext& run, const std::string& setting) {
  if (setting == "sft") return run_sft(run);
  if (setting == "ppo") {
    reset_adapters(run.model, run.config.seed);
    return run_ppo(run, "ppo");
  }
  if (setting == "sft+ppo") {
    // PPO continues from the SFT checkpoint the validation metric selects.
    SelectionOptions options{run.config.selection.metric, run.config.selection.test_set};
    auto chosen = select_checkpoint(read_results(results_path(run.run_dir)), "sft", options,
                                    results_path(run.run_dir));
    if (!chosen) throw Error(run.config.file + ": setting sft+ppo needs the sft setting first");
    std::fprintf(stderr, "[sft+ppo] starting from %s (%s %.4f on %s)\n", chosen->checkpoint.c_str(),
                 options.metric.c_str(), chosen->value, options.validation.c_str());
    load_trainable(run, run.path(chosen->checkpoint), models::lora_parameters(run.model));
    // The KL penalty keeps PPO near the SFT policy it starts from (RAGE, TRL), so that adapter is
    // frozen as the reference; the base alone never saw a citation and would make every cited
    // source cost more in KL than the reward can pay.
    models::keep_reference_adapters(run.model);
    return run_ppo(run, "sft+ppo");
  }
  throw Error(run.config.file + ": unknown setting '" + setting + "'");
}

}  // namespace citeforge::trainer
