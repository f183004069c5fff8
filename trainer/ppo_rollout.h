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
#include "trainer/evaluate.h"

namespace citeforge::trainer {

struct Trajectories {
  std::vector<std::string> example_ids;
  std::vector<std::vector<int64_t>> prompts;    // token ids (BOS first)
  std::vector<std::vector<int64_t>> responses;  // generated ids, EOS included when it ended one
  std::vector<std::vector<float>> logprobs;     // sampling log-probabilities of the responses
  std::vector<std::string> answers;             // decoded responses (EOS removed)
  std::vector<double> scores;                   // the citation reward (P + R) / 2 per answer
  std::vector<double> answer_words;
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
};

// Samples one answer per example with the policy (adapters on, no dropout) and scores it.
Trajectories rollout(models::LlamaForCausalLM& policy, const PromptFormat& format,
                     const std::vector<data::Example>& examples, const RolloutOptions& options,
                     const rewards::MetricOptions& metric_options);

}  // namespace citeforge::trainer
