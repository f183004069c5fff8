// PPO's rollout side: prompts and the current policy in, trajectories out. It knows nothing of
// optimisers, so a rollout process of a distributed run can call it with a policy copy whose
// adapters were broadcast by the learners.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "data/example.h"
#include "models/llama.h"
#include "rewards/metrics.h"
#include "trainer/run/prompt_format.h"

namespace citeforge::trainer {

struct Trajectories {
  std::vector<std::string> example_ids;
  std::vector<std::vector<int64_t>> prompts;    // token ids (BOS first)
  std::vector<std::vector<int64_t>> responses;  // generated ids, EOS included when it ended one
  std::vector<std::vector<float>> logprobs;     // sampling log-probabilities of the responses
  std::vector<std::string> answers;             // decoded responses (EOS removed)
  // The reward PPO optimises per answer: rollout_reward() of its citation metrics.
  std::vector<double> scores;
  std::vector<double> precisions, recalls;  // the reward's parts, before any penalty
  std::vector<double> answer_words;
  // 1 when the answer was cut at max_new_tokens (no EOS), 0 when it ended itself.
  std::vector<uint8_t> truncated;
  int64_t policy_version = 0;  // which weights produced them
};

struct RolloutOptions {
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t max_new_tokens = 48;
  uint64_t seed = 0;  // sampling seed for this batch
  // Where `examples` start in the iteration's batch: a rollout rank's shard samples each row
  // with the generator it would have had in the whole batch (models::SamplingOptions).
  int64_t first_row = 0;
  // Subtracted from the reward of an answer cut at max_new_tokens (TRL's missing_eos_penalty);
  // 0 = none.
  double missing_eos_penalty = 0;
  bool share_prompt_prefix = false;  // models::SamplingOptions::share_prompt_prefix
};

// The reward of one sampled answer: (precision + recall) / 2, minus missing_eos_penalty when the
// answer was cut. An answer with no words earns 0 even on a question with no relevant source,
// where RAGE's rule scores citing nothing as a correct abstention (1.0): abstaining means saying
// so, and a free 1.0 for ending at once is a reward the policy would learn to collect.
double rollout_reward(const rewards::AnswerMetrics& metrics, bool truncated,
                      double missing_eos_penalty);

// Samples one answer per example with the policy (adapters on, no dropout) and scores it.
Trajectories rollout(models::LlamaForCausalLM& policy, const PromptFormat& format,
                     const std::vector<data::Example>& examples, const RolloutOptions& options,
                     const rewards::MetricOptions& metric_options);

}  // namespace citeforge::trainer
