// PPO's learner side: trajectories in, one PPO update of the adapters and the value head out.
// It recomputes the behaviour policy's and the reference policy's (adapters off: the same
// model, no second copy of the base) log-probabilities and the values, shapes the rewards with
// the per-token KL penalty, estimates advantages with GAE and runs several epochs of clipped
// policy and value losses over shuffled minibatches (trainer/ppo/ppo_math.h).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/llama.h"
#include "models/value_head.h"
#include "trainer/config/run_config.h"
#include "trainer/distributed/gradient_sum.h"
#include "trainer/ppo/ppo_math.h"
#include "trainer/ppo/ppo_rollout.h"

namespace citeforge::trainer {

struct PpoLearner {
  models::LlamaForCausalLM policy{nullptr};
  models::ValueHead value_head{nullptr};
  PpoSection config;
  KlController kl;
  std::vector<torch::Tensor> params;  // adapters + value head
  std::unique_ptr<torch::optim::AdamW> optimizer;
  int64_t pad_id = 0;
};

// Sets up the optimiser over the policy's LoRA parameters and the value head.
PpoLearner make_ppo_learner(models::LlamaForCausalLM policy, models::ValueHead value_head,
                            const PpoSection& config, int64_t pad_id);

// What one PPO update saw and did: the per-iteration diagnostics of metrics.jsonl
// (docs/ppo.md names each).
struct PpoStats {
  // The batch: reward and its parts, the share of answers cut at max_new_tokens, lengths.
  double reward_mean = 0, reward_std = 0;
  double precision_mean = 0, recall_mean = 0;
  double truncated_share = 0;
  int64_t sequences = 0;
  double answer_words = 0, response_tokens = 0, prompt_tokens = 0;  // means per sequence
  // KL to the reference: mean per-sequence sum over tokens, with the configured estimator
  // (`kl`, the one the penalty uses) and with both k1 and k3.
  double kl = 0, kl_k1 = 0, kl_k3 = 0;
  double beta = 0, lr = 0;
  // Sampler vs learner: the largest and the mean |log-prob difference| of the sampled tokens.
  double logprob_gap_max = 0, logprob_gap_mean = 0;
  // Raw (unwhitened) advantages and the returns, over real tokens.
  double advantage_mean = 0, advantage_std = 0, return_mean = 0, return_std = 0;
  double explained_variance = 0;
  // The update: means over minibatches, and max |ratio - 1| on the first minibatch (0 up to
  // rounding: the policy has not moved yet).
  double entropy = 0, clip_fraction = 0, value_clip_fraction = 0;
  double policy_loss = 0, value_loss = 0, approx_kl = 0;
  double first_ratio_deviation = 0;
  int64_t minibatch_updates = 0;
  bool early_stopped = false;
  double reference_value_seconds = 0, update_seconds = 0;
};

// The learning rate of iteration `it` (1-based): ppo.lr, or with lr_schedule linear decaying
// from ppo.lr at the first iteration towards 0 after the last.
double ppo_learning_rate(const PpoSection& config, int64_t it);
// Sets the optimiser's learning rate to ppo_learning_rate(config, iteration).
void set_learning_rate(PpoLearner& learner, int64_t iteration);

// The learners of a PPO update: one (the default), or several that split every minibatch's rows
// (data parallel). Every learner holds the whole batch and scores it the same way, so
// advantages and statistics are the same on all; each takes its share of the minibatch's rows,
// scales its loss by its share of the minibatch's tokens, and the gradients are summed over the
// learners before the one optimiser step every learner takes. The sum equals the single
// learner's gradient up to floating-point summation order.
struct LearnerShare {
  int index = 0;  // this learner's position among the learners
  int count = 1;
  // In-place sum over the learners; `phase` names the collective in failure messages.
  ReduceSum all_reduce_sum;
};

// Told each phase of an update as it ends (the scoring pass, each minibatch), so that an update
// that takes minutes on a CPU is not silent until it is done.
using PhaseReport = std::function<void(const std::string& what)>;

// One PPO update from `batch`. `shuffle_seed` orders the minibatches; `phase` prefixes the
// names of several learners' collectives; `report`, when set, hears of each phase as it ends.
// Throws Error (naming `iteration`) on a non-finite loss, before any parameter changes from that
// minibatch, and when the learner's log-probabilities of the sampled tokens stray from the
// sampler's by more than ppo.max_logprob_gap.
PpoStats ppo_update(PpoLearner& learner, const Trajectories& batch, uint64_t shuffle_seed,
                    int64_t iteration, const LearnerShare& share = {},
                    const std::string& phase = "ppo", const PhaseReport& report = {});

// Prompt + response packed for one forward pass: prompts left-padded to P, responses
// right-padded to R; `mask` [B, R] marks real response tokens.
struct PackedTrajectories {
  torch::Tensor ids, positions, key_mask;  // [B, P + R]
  torch::Tensor responses, mask;           // [B, R]
  int64_t prompt_width = 0, response_width = 0;
};
PackedTrajectories pack_trajectories(const Trajectories& t, int64_t pad_id,
                                     const torch::Device& device);

struct PolicyOutputs {
  torch::Tensor logprobs;  // [B, R] of the response tokens at the sampling temperature
  torch::Tensor values;    // [B, R] (undefined without a value head)
  torch::Tensor logits;    // [B, R, V] (scaled by 1 / temperature)
};
PolicyOutputs policy_outputs(models::LlamaForCausalLM& policy, models::ValueHead* value_head,
                             const PackedTrajectories& packed, const torch::Tensor& rows,
                             double temperature);

// The scoring pass that opens every update, with gradients off: behaviour and reference
// log-probabilities, values, the per-token KL, rewards and whitened GAE advantages. Fills the
// batch statistics of `stats` (reward, KL, beta, explained variance, lengths, the time taken)
// and leaves the policy and value head in eval mode (no dropout: the probability ratio must be
// 1 before the first step). With ppo.share_prompt_prefix on a CPU it runs as the rollout's
// prefill did (the prompts' shared start once, the rest packed: models::packed_hidden_states),
// the padded batch's outputs up to rounding.
struct ScoredBatch {
  PackedTrajectories packed;
  torch::Tensor old_logprobs, old_values, advantages, returns;  // [B, R]
};
ScoredBatch score_batch(PpoLearner& learner, const Trajectories& batch, PpoStats& stats,
                        int64_t iteration);

}  // namespace citeforge::trainer
