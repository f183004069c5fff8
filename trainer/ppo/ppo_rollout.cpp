#include "trainer/ppo/ppo_rollout.h"

#include <cstdio>

#include "models/generate.h"
#include "trainer/run/prompt_format.h"

namespace citeforge::trainer {

double rollout_reward(const rewards::AnswerMetrics& metrics, bool truncated,
                      double missing_eos_penalty) {
  const double reward = metrics.answer_length == 0 ? 0.0 : metrics.reward;
  return truncated ? reward - missing_eos_penalty : reward;
}

Trajectories rollout(models::LlamaForCausalLM& policy, const PromptFormat& format,
                     const std::vector<data::Example>& examples, const RolloutOptions& options,
                     const rewards::MetricOptions& metric_options) {
  Trajectories t;
  const int64_t room = policy->config.context_length() - options.max_new_tokens;
  int64_t cut = 0;
  for (const auto& ex : examples) {
    t.example_ids.push_back(ex.id);
    t.prompts.push_back(encode_prompt(*format.tokenizer, format.chat, format.prompt, ex));
    cut += fit_prompt(t.prompts.back(), room);
  }
  // Said once per process: every rollout of a run with long prompts would repeat it.
  static bool warned = false;
  if (cut > 0 && !warned) {
    warned = true;
    std::fprintf(stderr,
                 "[rollout] warning: prompts longer than the model's %lld positions allow with "
                 "%lld new tokens have their middle (sources) cut\n",
                 (long long)policy->config.context_length(), (long long)options.max_new_tokens);
  }
  models::SamplingOptions sampling;
  sampling.greedy = false;
  sampling.temperature = options.temperature;
  sampling.top_p = options.top_p;
  sampling.max_new_tokens = options.max_new_tokens;
  sampling.share_prompt_prefix = options.share_prompt_prefix;
  sampling.seed = options.seed;
  sampling.first_row = options.first_row;
  sampling.eos_ids = {format.tokenizer->eos_id()};
  // The learner re-scores these answers in whole minibatches; a sampler batch that shrank as
  // answers finished would round differently in bf16 and open a log-prob gap that PPO's ratio
  // reads as a change of policy (experiments/bench/results/ppo_precision_cpu.md).
  sampling.drop_finished_rows = false;
  const auto decode = [&](const std::vector<int64_t>& ids) {
    return format.tokenizer->decode(ids);
  };
  const bool was_training = policy->is_training();
  policy->eval();
  auto generations = models::generate(policy, t.prompts, sampling, decode);
  if (was_training) policy->train();
  for (std::size_t i = 0; i < examples.size(); ++i) {
    auto& g = generations[i];
    auto metrics = rewards::score_answer(examples[i], g.text, metric_options);
    // A stop string also ends an answer on purpose; only the length limit cuts one.
    const bool cut = g.finish_reason == "length";
    t.responses.push_back(std::move(g.tokens));
    t.logprobs.push_back(std::move(g.logprobs));
    t.answers.push_back(g.text);
    t.scores.push_back(rollout_reward(metrics, cut, options.missing_eos_penalty));
    t.precisions.push_back(metrics.precision);
    t.recalls.push_back(metrics.recall);
    t.answer_words.push_back(metrics.answer_length);
    t.truncated.push_back(cut ? 1 : 0);
  }
  return t;
}

}  // namespace citeforge::trainer
