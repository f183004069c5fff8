#include "trainer/ppo_stage.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fault.h"
#include "trainer/lm_trainer.h"
#include "trainer/ppo_distributed.h"
#include "trainer/ppo_iteration.h"
#include "trainer/ppo_learner.h"
#include "trainer/ppo_rollout.h"
#include "trainer/progress.h"
#include "trainer/stages.h"
#include "trainer/train_checkpoint.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

void run_ppo(RunContext& run, const std::string& stage) {
  if (run.dist) return run_ppo_distributed(run, stage);
  const auto& c = run.config.ppo;
  models::ValueHead value_head = make_ppo_value_head(run, stage);
  PpoLearner learner = make_ppo_learner(run.model, value_head, c, run.tokenizer->eos_id());
  CheckpointContents contents{{}, ppo_trainable(run, value_head), learner.optimizer.get()};
  contents.state.stage = stage;

  const std::vector<data::Example> pool = ppo_pool(run);
  const std::string last_dir = (fs::path(run.checkpoint_root()) / (stage + "-last")).string();

  int64_t done = 0;
  if (run.config.resume == "auto" && fs::exists(last_dir)) {
    TrainingState s = load_checkpoint(last_dir, contents);
    done = s.global_step;
    learner.kl.beta = s.extra.value("beta", learner.kl.beta);
    std::fprintf(stderr, "[%s] resuming from %s after iteration %lld\n", stage.c_str(),
                 last_dir.c_str(), (long long)done);
    append_jsonl(run.metrics_path(),
                 nlohmann::json{{"stage", stage}, {"event", "resume"}, {"iteration", done}}.dump());
    if (int k = ppo_eval_index(c, done))
      evaluate_all(run, stage, k, "checkpoints/" + ppo_checkpoint_name(stage, k));
  }

  auto save = [&](const std::string& dir, int64_t iteration) {
    contents.state.epoch = iteration;
    contents.state.global_step = iteration;
    contents.state.epoch_complete = true;
    contents.state.extra = {{"beta", learner.kl.beta}};
    save_checkpoint(dir, contents, adapter_files(run));
  };

  Progress progress(stage, c.iterations);
  for (int64_t it = done + 1; it <= c.iterations; ++it) {
    std::vector<data::Example> batch = ppo_prompt_batch(run, stage, pool, it);
    auto start = std::chrono::steady_clock::now();
    Trajectories trajectories = rollout(run.model, run.format, batch,
                                        ppo_rollout_options(run, stage, it), run.metric_options);
    const double rollout_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    PpoStats s = ppo_update(learner, trajectories, ppo_shuffle_seed(run, stage, it), it);
    if (it % c.log_every == 0 || it == c.iterations) {
      append_jsonl(run.metrics_path(), ppo_metrics_record(stage, it, s, rollout_s).dump());
      progress.update(it, ppo_status_line(s, rollout_s));
    }
    ppo_checkpoint_and_evaluate(run, stage, it, save);
    maybe_kill_at(stage, it);
  }
  progress.finish("");
}

}  // namespace citeforge::trainer
