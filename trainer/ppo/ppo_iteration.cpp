#include "trainer/ppo/ppo_iteration.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "data/random.h"
#include "models/lora.h"
#include "trainer/eval/evaluate.h"

namespace citeforge::trainer {

std::vector<data::Example> ppo_pool(const RunConfig& config, const RunData& run_data) {
  const auto& c = config.ppo;
  std::vector<data::Example> pool = run_data.train;
  if (c.max_examples > 0 && int(pool.size()) > c.max_examples) pool.resize(c.max_examples);
  return pool;
}

std::vector<data::Example> ppo_prompt_batch(const RunConfig& config, const std::string& stage,
                                            const std::vector<data::Example>& pool, int64_t it) {
  data::Rng prompt_rng(data::derive_seed(config.seed, stage + "/prompts/" + std::to_string(it)));
  std::vector<data::Example> batch;
  for (auto i : data::sample_indices(prompt_rng, pool.size(), std::size_t(config.ppo.batch_size)))
    batch.push_back(pool[i]);
  return batch;
}

RolloutOptions ppo_rollout_options(const RunConfig& config, const std::string& stage, int64_t it) {
  const auto& c = config.ppo;
  RolloutOptions options;
  options.temperature = c.temperature;
  options.top_p = c.top_p;
  options.max_new_tokens = c.max_new_tokens;
  options.missing_eos_penalty = c.missing_eos_penalty;
  options.share_prompt_prefix = c.share_prompt_prefix;
  options.seed = data::derive_seed(config.seed, stage + "/sample/" + std::to_string(it));
  return options;
}

uint64_t ppo_shuffle_seed(const RunConfig& config, const std::string& stage, int64_t it) {
  return data::derive_seed(config.seed, stage + "/shuffle/" + std::to_string(it));
}

int ppo_eval_index(const PpoSection& c, int64_t it) {
  if (it % c.eval_every == 0) return int(it / c.eval_every);
  if (it == c.iterations) return int((it + c.eval_every - 1) / c.eval_every);
  return 0;
}

std::string ppo_checkpoint_name(const std::string& stage, int k) {
  return stage + "-" + std::to_string(k);
}

void ppo_checkpoint_and_evaluate(RunContext& run, const std::string& stage, int64_t it,
                                 const std::function<void(const std::string&, int64_t)>& save) {
  const auto& c = run.setup.config.ppo;
  const int k = ppo_eval_index(c, it);
  if (k || it % c.checkpoint_every == 0) save(run.setup.dir.checkpoint(stage + "-last"), it);
  if (k) {
    save(run.setup.dir.checkpoint(ppo_checkpoint_name(stage, k)), it);
    evaluate_all(run, stage, k, RunDir::relative_checkpoint(ppo_checkpoint_name(stage, k)));
  }
}

models::ValueHead make_ppo_value_head(const RunSetup& setup, const RunPolicy& policy,
                                      const std::string& stage) {
  torch::manual_seed(data::derive_seed(setup.config.seed, stage + "/value_head"));
  models::ValueHead value_head(models::width_scaled_value_head(policy.model->config.hidden_size));
  value_head->to(setup.device);
  return value_head;
}

NamedTensors ppo_trainable(RunPolicy& policy, models::ValueHead& value_head) {
  NamedTensors trainable = models::lora_parameters(policy.model);
  for (auto& item : value_head->named_parameters())
    trainable.emplace_back("v_head." + item.key(), item.value());
  return trainable;
}

namespace {

// Every token the iteration pushed through the model (prompts and answers, once per pass it
// counts them in: rollout, scoring and update), per second of the whole iteration.
double tokens_per_second(const PpoStats& s, double rollout_s) {
  const double seconds = rollout_s + s.reference_value_seconds + s.update_seconds;
  const double tokens = double(s.sequences) * (s.prompt_tokens + s.response_tokens);
  return seconds > 0 ? tokens / seconds : 0.0;
}

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace

nlohmann::json ppo_metrics_record(const std::string& stage, int64_t it, const PpoStats& s,
                                  double rollout_s) {
  return nlohmann::json{{"stage", stage},
                        {"iteration", it},
                        {"reward_mean", s.reward_mean},
                        {"reward_std", s.reward_std},
                        {"precision_mean", s.precision_mean},
                        {"recall_mean", s.recall_mean},
                        {"truncated_share", s.truncated_share},
                        {"kl", s.kl},
                        {"kl_k1", s.kl_k1},
                        {"kl_k3", s.kl_k3},
                        {"beta", s.beta},
                        {"lr", s.lr},
                        {"logprob_gap_max", s.logprob_gap_max},
                        {"logprob_gap_mean", s.logprob_gap_mean},
                        {"entropy", s.entropy},
                        {"clip_fraction", s.clip_fraction},
                        {"value_clip_fraction", s.value_clip_fraction},
                        {"first_ratio_deviation", s.first_ratio_deviation},
                        {"policy_loss", s.policy_loss},
                        {"value_loss", s.value_loss},
                        {"approx_kl", s.approx_kl},
                        {"explained_variance", finite_or_null(s.explained_variance)},
                        {"advantage_mean", s.advantage_mean},
                        {"advantage_std", s.advantage_std},
                        {"return_mean", s.return_mean},
                        {"return_std", s.return_std},
                        {"answer_words", s.answer_words},
                        {"response_tokens", s.response_tokens},
                        {"prompt_tokens", s.prompt_tokens},
                        {"tokens_per_s", tokens_per_second(s, rollout_s)},
                        {"early_stopped", s.early_stopped},
                        {"rollout_s", rollout_s},
                        {"reference_value_s", s.reference_value_seconds},
                        {"update_s", s.update_seconds}};
}

std::string ppo_status_line(const PpoStats& s, double rollout_s) {
  char status[320];
  std::snprintf(status, sizeof status,
                "reward %.3f±%.3f (P %.2f R %.2f)  cut %.0f%%  kl %.3f/%.3f  beta %.3f  "
                "ent %.2f  clip %.2f/%.2f  akl %.4f  ev %.2f  gap %.1e  len %.1f  "
                "%.0f tok/s  t %.1f/%.1f/%.1fs",
                s.reward_mean, s.reward_std, s.precision_mean, s.recall_mean,
                100 * s.truncated_share, s.kl_k1, s.kl_k3, s.beta, s.entropy, s.clip_fraction,
                s.value_clip_fraction, s.approx_kl, s.explained_variance, s.logprob_gap_max,
                s.response_tokens, tokens_per_second(s, rollout_s), rollout_s,
                s.reference_value_seconds, s.update_seconds);
  return status;
}

}  // namespace citeforge::trainer
