// The numerical core of PPO for language models (Ziegler et al. 2019, as in TRL's PPOTrainer):
// per-token KL against the reference policy, the KL-shaped token rewards, GAE, whitening, the
// clipped policy and value losses, entropy, explained variance and the KL coefficient
// controllers. Pure functions on tensors so each can be checked by hand.
//
// Conventions shared by every function here:
// - Sequence tensors are [B, T] over the response tokens only (the prompt is not part of the
//   episode). `mask` [B, T] (bool or float) marks real response tokens: nonzero = real (the EOS
//   token included), zero = padding after EOS.
// - Padded positions never influence a result, even when they hold NaN or Inf (the policy's
//   log-probability of a padding token is meaningless): they are selected away with where(),
//   not multiplied by zero. Masked positions of [B, T] outputs are 0.
// - Arithmetic is at least fp32: fp16/bf16 inputs are promoted, fp64 stays fp64.
// - Wrong shapes, empty masks and invalid hyper-parameters throw citeforge::Error whose message
//   names the function, the tensor or parameter and what is wrong.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "trainer/config/config_choices.h"

namespace citeforge::trainer {

// ---- masks and checks ------------------------------------------------------------------------

// Sum of x over the positions where mask is nonzero (all dims, a 0-dim tensor).
torch::Tensor masked_sum(const torch::Tensor& x, const torch::Tensor& mask);
// Sum over `dim` only (e.g. dim 1 gives one value per sequence).
torch::Tensor masked_sum(const torch::Tensor& x, const torch::Tensor& mask, int64_t dim);
// Mean of x over the positions where mask is nonzero; an all-zero mask is an Error.
torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask);
// Variance over the masked positions with Bessel's correction n / (n - 1), as TRL's masked_var
// (unbiased=True); fewer than two positions is an Error.
torch::Tensor masked_var(const torch::Tensor& x, const torch::Tensor& mask);

// True when every element is finite (no NaN, no +-Inf); integer and bool tensors always are.
bool all_finite(const torch::Tensor& x);
// Throws Error("<what>: N of M values are not finite (nan or inf)") unless all_finite(x).
void require_finite(const torch::Tensor& x, const std::string& what);

// ---- rewards ---------------------------------------------------------------------------------

// KlEstimator (trainer/config/config_choices.h): k1 is log p - log p_ref, unbiased for
// KL(p || p_ref) under samples of p and can be negative; k3 is (r - 1) - log r with
// r = p_ref / p, unbiased as well and never negative (Schulman 2020).

// Per-token KL estimate [B, T] of the policy against the reference from the log-probabilities
// of the sampled tokens. Not masked: padded positions carry whatever the inputs hold there.
torch::Tensor kl_per_token(const torch::Tensor& logprobs, const torch::Tensor& ref_logprobs,
                           KlEstimator estimator = KlEstimator::k1);

// The reward PPO optimises, per token: -beta * kl at every real token, plus the sequence's
// scalar score (here the citation reward) on its last real token. scores [B], kl [B, T].
// A row without any real token is an Error (its score would have nowhere to go).
torch::Tensor token_rewards(const torch::Tensor& scores, const torch::Tensor& kl,
                            const torch::Tensor& mask, double beta);

// ---- advantages ------------------------------------------------------------------------------

struct GaeResult {
  torch::Tensor advantages;  // [B, T], 0 at masked positions
  torch::Tensor returns;     // advantages + values, the value head's regression target
};

// Generalised advantage estimation (Schulman et al. 2016), backwards over t:
//   delta_t = r_t + gamma * V_{t+1} - V_t,   A_t = delta_t + gamma * lambda * A_{t+1},
// where V_{t+1} and A_{t+1} are 0 past the last real token (the episode ends at EOS, nothing is
// bootstrapped) and at any masked position. gamma and lambda lie in [0, 1].
GaeResult gae(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask,
              double gamma, double lambda);

// (x - mean) / sqrt(var + 1e-8) over the masked positions, with masked_var's unbiased variance
// (as TRL's masked_whiten). shift_mean = false adds the mean back, so only the scale changes.
// Masked positions of the result are 0.
torch::Tensor whiten(const torch::Tensor& x, const torch::Tensor& mask, bool shift_mean = true);

// ---- losses ----------------------------------------------------------------------------------

struct PolicyLoss {
  torch::Tensor loss;          // 0-dim, differentiable w.r.t. logprobs_new
  double clip_fraction;        // share of real tokens where the clipped term was the larger one
  double approx_kl;            // 0.5 * mean((logp_new - logp_old)^2), TRL's "policy/approxkl"
  double approx_kl_k3;         // mean((r - 1) - log r), r = p_new / p_old: the non-negative form
  double ratio_mean;           // mean of r over real tokens (1 at the first minibatch of an epoch)
  double ratio_max_deviation;  // max |r - 1| over real tokens (0 at the first minibatch)
};

// The clipped surrogate: masked mean of max(-A * r, -A * clip(r, 1 - eps, 1 + eps)) with
// r = exp(logp_new - logp_old); eps = clip_range > 0. Statistics are over real tokens.
PolicyLoss policy_loss(const torch::Tensor& logprobs_new, const torch::Tensor& logprobs_old,
                       const torch::Tensor& advantages, const torch::Tensor& mask,
                       double clip_range);

struct ValueLoss {
  torch::Tensor loss;    // 0-dim, differentiable w.r.t. values_new
  double clip_fraction;  // share of real tokens where the clipped error was the larger one
};

// 0.5 * masked mean of max((v - R)^2, (v_clip - R)^2) with v_clip = v_old + clip(v - v_old,
// -eps, eps); eps = clip_range_value > 0 (PPO2 / TRL value clipping).
ValueLoss value_loss(const torch::Tensor& values_new, const torch::Tensor& values_old,
                     const torch::Tensor& returns, const torch::Tensor& mask,
                     double clip_range_value);

// Entropy (nats) of the softmax of logits [B, T, V] at each position, [B, T], in fp32 or wider.
torch::Tensor entropy_per_token(const torch::Tensor& logits);
// Its masked mean over real tokens (0-dim, differentiable, so usable as an entropy bonus).
torch::Tensor entropy_from_logits(const torch::Tensor& logits, const torch::Tensor& mask);

// 1 - Var(R - V) / Var(R) over real tokens: 1 = values predict returns perfectly, 0 = no better
// than a constant, negative = worse. NaN when the returns are constant (undefined; nlohmann's
// JSON writes it as null). The variance's normalisation cancels in the ratio.
double explained_variance(const torch::Tensor& values, const torch::Tensor& returns,
                          const torch::Tensor& mask);

// ---- KL coefficient --------------------------------------------------------------------------

// The coefficient beta of the KL penalty. Fixed: beta never changes. Adaptive (Ziegler et al.
// 2019, section 2.2): after each batch,
//   e = clip(current_kl / target - 1, -0.2, 0.2),   beta *= 1 + e * n_steps / horizon,
// so beta grows while the policy drifts further than `target` nats from the reference and
// shrinks while it stays closer. current_kl is the batch's mean per-sequence KL (summed over
// tokens), n_steps the number of sequences in the batch.
struct KlController {
  double beta = 0.05;
  bool adaptive = false;
  double target = 6.0;      // adaptive only: target KL in nats per sequence
  int64_t horizon = 10000;  // adaptive only: in sequences

  // Updates beta (a no-op when fixed). A non-finite current_kl or negative n_steps is an Error.
  void update(double current_kl, int64_t n_steps);
};

// Checked constructors: beta >= 0, target > 0, horizon > 0, all finite.
KlController fixed_kl_controller(double beta);
KlController adaptive_kl_controller(double initial_beta, double target, int64_t horizon);

// Early stopping of the PPO epochs: true when the approximate KL between the policy being
// updated and the rollout policy exceeds factor * target_kl (factor 1.5 as in TRL and
// Stable-Baselines3), or is NaN. target_kl > 0 and factor > 0, else an Error.
bool kl_early_stop(double approx_kl, double target_kl, double factor = 1.5);

}  // namespace citeforge::trainer
