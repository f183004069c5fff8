#include "trainer/ppo_stage.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fault.h"
#include "data/random.h"
#include "models/lora.h"
#include "models/value_head.h"
#include "trainer/lm_trainer.h"
#include "trainer/ppo_learner.h"
#include "trainer/ppo_rollout.h"
#include "trainer/progress.h"
#include "trainer/stages.h"
#include "trainer/train_checkpoint.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

void run_ppo(RunContext& run, const std::string& stage) {
  const auto& c = run.config.ppo;
  const uint64_t seed = run.config.seed;
  torch::manual_seed(data::derive_seed(seed, stage + "/value_head"));
  models::ValueHeadOptions head_options;
  head_options.hidden_size = run.model->config.hidden_size;
  models::ValueHead value_head(head_options);
  value_head->to(run.device);
  PpoLearner learner = make_ppo_learner(run.model, value_head, c, run.tokenizer->eos_id());

  NamedTensors trainable = models::lora_parameters(run.model);
  for (auto& item : value_head->named_parameters())
    trainable.emplace_back("v_head." + item.key(), item.value());
  CheckpointContents contents{{}, trainable, learner.optimizer.get()};
  contents.state.stage = stage;

  std::vector<data::Example> pool = run.train;
  if (c.max_examples > 0 && int(pool.size()) > c.max_examples) pool.resize(c.max_examples);
  const std::string last_dir = (fs::path(run.checkpoint_root()) / (stage + "-last")).string();
  auto eval_index = [&](int64_t it) -> int {
    if (it % c.eval_every == 0) return int(it / c.eval_every);
    if (it == c.iterations) return int((it + c.eval_every - 1) / c.eval_every);
    return 0;
  };
  auto checkpoint_name = [&](int k) { return stage + "-" + std::to_string(k); };

  int64_t done = 0;
  if (run.config.resume == "auto" && fs::exists(last_dir)) {
    TrainingState s = load_checkpoint(last_dir, contents);
    done = s.global_step;
    learner.kl.beta = s.extra.value("beta", learner.kl.beta);
    std::fprintf(stderr, "[%s] resuming from %s after iteration %lld\n", stage.c_str(),
                 last_dir.c_str(), (long long)done);
    append_jsonl(run.metrics_path(),
                 nlohmann::json{{"stage", stage}, {"event", "resume"}, {"iteration", done}}.dump());
    if (int k = eval_index(done)) evaluate_all(run, stage, k, "checkpoints/" + checkpoint_name(k));
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
    data::Rng prompt_rng(data::derive_seed(seed, stage + "/prompts/" + std::to_string(it)));
    std::vector<data::Example> batch;
    for (auto i : data::sample_indices(prompt_rng, pool.size(), std::size_t(c.batch_size)))
      batch.push_back(pool[i]);
    auto start = std::chrono::steady_clock::now();
    RolloutOptions options{c.temperature, c.top_p, c.max_new_tokens,
                           data::derive_seed(seed, stage + "/sample/" + std::to_string(it))};
    Trajectories trajectories = rollout(run.model, run.format, batch, options, run.metric_options);
    const double rollout_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    PpoStats s = ppo_update(learner, trajectories,
                            data::derive_seed(seed, stage + "/shuffle/" + std::to_string(it)), it);
    if (it % c.log_every == 0 || it == c.iterations) {
      append_jsonl(run.metrics_path(),
                   nlohmann::json{{"stage", stage},
                                  {"iteration", it},
                                  {"reward_mean", s.reward_mean},
                                  {"reward_std", s.reward_std},
                                  {"kl", s.kl},
                                  {"beta", s.beta},
                                  {"entropy", s.entropy},
                                  {"clip_fraction", s.clip_fraction},
                                  {"value_clip_fraction", s.value_clip_fraction},
                                  {"policy_loss", s.policy_loss},
                                  {"value_loss", s.value_loss},
                                  {"approx_kl", s.approx_kl},
                                  {"explained_variance", std::isfinite(s.explained_variance)
                                                             ? nlohmann::json(s.explained_variance)
                                                             : nlohmann::json()},
                                  {"answer_words", s.answer_words},
                                  {"response_tokens", s.response_tokens},
                                  {"early_stopped", s.early_stopped},
                                  {"rollout_s", rollout_s},
                                  {"reference_value_s", s.reference_value_seconds},
                                  {"update_s", s.update_seconds}}
                       .dump());
      char status[200];
      std::snprintf(status, sizeof status,
                    "reward %.3f±%.3f  kl %.3f  beta %.3f  ent %.2f  clip %.2f  vloss %.4f  "
                    "words %.1f  t %.1f/%.1f/%.1fs",
                    s.reward_mean, s.reward_std, s.kl, s.beta, s.entropy, s.clip_fraction,
                    s.value_loss, s.answer_words, rollout_s, s.reference_value_seconds,
                    s.update_seconds);
      progress.update(it, status);
    }
    const int k = eval_index(it);
    if (k || it % c.checkpoint_every == 0) save(last_dir, it);
    if (k) {
      save((fs::path(run.checkpoint_root()) / checkpoint_name(k)).string(), it);
      evaluate_all(run, stage, k, "checkpoints/" + checkpoint_name(k));
    }
    maybe_kill_at(stage, it);
  }
  progress.finish("");
}

}  // namespace citeforge::trainer
