#include "trainer/ppo/ppo_learner.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "common/clock.h"
#include "common/error.h"
#include "common/fault.h"
#include "data/random.h"
#include "models/generate.h"
#include "models/lora.h"
#include "trainer/distributed/dist_env.h"
#include "trainer/distributed/gradient_sum.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {
PpoLearner make_ppo_learner(models::LlamaForCausalLM policy, models::ValueHead value_head,
                            const PpoSection& config, int64_t pad_id) {
  PpoLearner l;
  l.policy = policy;
  l.value_head = value_head;
  l.config = config;
  // The controller counts its horizon in sequences (Ziegler et al.); the config in iterations.
  l.kl = config.adaptive_kl
             ? adaptive_kl_controller(config.kl_coef, config.kl_target,
                                      int64_t(config.kl_horizon_iterations) * config.batch_size)
             : fixed_kl_controller(config.kl_coef);
  for (auto& [name, p] : models::lora_parameters(policy)) l.params.push_back(p);
  for (auto& p : value_head->parameters()) l.params.push_back(p);
  l.optimizer = std::make_unique<torch::optim::AdamW>(
      l.params, torch::optim::AdamWOptions(config.lr).eps(config.adam_eps).weight_decay(0.0));
  l.pad_id = pad_id;
  return l;
}

double ppo_learning_rate(const PpoSection& c, int64_t it) {
  if (c.lr_schedule != PpoSchedule::linear) return c.lr;
  return c.lr * (1.0 - double(it - 1) / double(c.iterations));
}

void set_learning_rate(PpoLearner& l, int64_t iteration) {
  const double lr = ppo_learning_rate(l.config, iteration);
  for (auto& group : l.optimizer->param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

PackedTrajectories pack_trajectories(const Trajectories& t, int64_t pad_id,
                                     const torch::Device& device) {
  const int64_t B = int64_t(t.prompts.size());
  PackedTrajectories p;
  for (int64_t b = 0; b < B; ++b) {
    p.prompt_width = std::max<int64_t>(p.prompt_width, int64_t(t.prompts[b].size()));
    p.response_width = std::max<int64_t>(p.response_width, int64_t(t.responses[b].size()));
  }
  const int64_t P = p.prompt_width, R = p.response_width, W = P + R;
  auto ids = torch::full({B, W}, pad_id, torch::kInt64);
  auto real = torch::zeros({B, W}, torch::kBool);
  auto ids_a = ids.accessor<int64_t, 2>();
  auto real_a = real.accessor<bool, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const auto& prompt = t.prompts[b];
    const auto& response = t.responses[b];
    const int64_t offset = P - int64_t(prompt.size());
    for (std::size_t i = 0; i < prompt.size(); ++i) {
      ids_a[b][offset + int64_t(i)] = prompt[i];
      real_a[b][offset + int64_t(i)] = true;
    }
    for (std::size_t i = 0; i < response.size(); ++i) {
      ids_a[b][P + int64_t(i)] = response[i];
      real_a[b][P + int64_t(i)] = true;
    }
  }
  // Positions count real tokens only, so a left-padded prompt starts at position 0.
  auto positions = (real.to(torch::kInt64).cumsum(1) - 1).clamp_min(0);
  p.ids = ids.to(device);
  p.positions = positions.to(device);
  p.key_mask = real.to(device);
  p.responses = ids.narrow(1, P, R).to(device);
  p.mask = real.narrow(1, P, R).to(torch::kFloat32).to(device);
  return p;
}

namespace {

// Log-probabilities, logits and values from `states` [B, R, hidden], the state before each
// response token of `responses` [B, R].
PolicyOutputs outputs_from_states(models::LlamaForCausalLM& policy, models::ValueHead* value_head,
                                  const torch::Tensor& states, const torch::Tensor& responses,
                                  double temperature) {
  PolicyOutputs out;
  // The output layer runs in fp32 whatever the model's dtype: log-probabilities of a bf16
  // matmul are too coarse for the ratio and the KL that PPO reads from them.
  out.logits = policy->logits(states.to(torch::kFloat32)) / temperature;
  out.logprobs = torch::log_softmax(out.logits, -1).gather(-1, responses.unsqueeze(-1)).squeeze(-1);
  if (value_head) out.values = (*value_head)->forward(states);
  return out;
}

}  // namespace

PolicyOutputs policy_outputs(models::LlamaForCausalLM& policy, models::ValueHead* value_head,
                             const PackedTrajectories& packed, const torch::Tensor& rows,
                             double temperature) {
  const int64_t P = packed.prompt_width, R = packed.response_width;
  models::AttentionInputs inputs{packed.positions.index_select(0, rows),
                                 packed.key_mask.index_select(0, rows)};
  auto hidden = policy->hidden_states(packed.ids.index_select(0, rows), inputs);
  // The state before response token t is the hidden state at position P + t - 1.
  return outputs_from_states(policy, value_head, hidden.narrow(1, P - 1, R),
                             packed.responses.index_select(0, rows), temperature);
}

namespace {

// The scoring pass's outputs for the whole batch. With ppo.share_prompt_prefix on a CPU, as the
// rollout prefilled them: the prompts' shared leading tokens once and the rest of every
// sequence packed without padding (models::packed_hidden_states), the work the rollout saved
// saved here too, twice (behaviour and reference policy); the same outputs up to rounding, so
// the first minibatch's ratio stays 1 within it. Otherwise the padded batch the update reads.
PolicyOutputs score_all(PpoLearner& l, models::ValueHead* value_head, const Trajectories& batch,
                        const PackedTrajectories& packed) {
  const int64_t B = int64_t(batch.prompts.size());
  const torch::Device device = l.params.front().device();
  if (!l.config.share_prompt_prefix || !models::packs_prompt_rows(device) ||
      !models::can_share_prompt_prefix(l.policy->config, B))
    return policy_outputs(
        l.policy, value_head, packed,
        torch::arange(B, torch::TensorOptions().dtype(torch::kInt64).device(device)),
        l.config.temperature);
  std::vector<std::vector<int64_t>> sequences;
  std::vector<int64_t> from;
  for (int64_t b = 0; b < B; ++b) {
    sequences.push_back(batch.prompts[size_t(b)]);
    sequences.back().insert(sequences.back().end(), batch.responses[size_t(b)].begin(),
                            batch.responses[size_t(b)].end());
    from.push_back(int64_t(batch.prompts[size_t(b)].size()) - 1);
  }
  const auto states =
      models::packed_hidden_states(l.policy, sequences, models::shared_prompt_prefix(batch.prompts),
                                   from, packed.response_width);
  return outputs_from_states(l.policy, value_head, states, packed.responses, l.config.temperature);
}

// Mean and standard deviation of x over the real tokens of `mask`.
std::pair<double, double> masked_mean_std(const torch::Tensor& x, const torch::Tensor& mask) {
  const double mean = masked_mean(x, mask).item<double>();
  const double var = mask.sum().item<double>() > 1 ? masked_var(x, mask).item<double>() : 0.0;
  return {mean, std::sqrt(var)};
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / double(v.size());
}

// The sampler's log-probabilities of the response tokens, packed like `packed.responses`.
torch::Tensor sampler_logprobs(const Trajectories& t, const PackedTrajectories& packed) {
  const int64_t B = int64_t(t.responses.size()), R = packed.response_width;
  auto out = torch::zeros({B, R}, torch::kFloat32);
  auto a = out.accessor<float, 2>();
  for (int64_t b = 0; b < B; ++b) {
    if (t.logprobs[b].size() != t.responses[b].size())
      throw Error("ppo: trajectory " + std::to_string(b) + " has " +
                  std::to_string(t.logprobs[b].size()) + " sampling log-probabilities for " +
                  std::to_string(t.responses[b].size()) + " response tokens");
    for (std::size_t i = 0; i < t.logprobs[b].size(); ++i) a[b][int64_t(i)] = t.logprobs[b][i];
  }
  return out.to(packed.mask.device());
}

}  // namespace

ScoredBatch score_batch(PpoLearner& l, const Trajectories& batch, PpoStats& stats,
                        int64_t iteration) {
  const auto& c = l.config;
  const torch::Device device = l.params.front().device();
  const int64_t B = int64_t(batch.prompts.size());
  auto start = std::chrono::steady_clock::now();
  l.policy->eval();
  l.policy->gradient_checkpointing = c.gradient_checkpointing;
  l.value_head->eval();
  ScoredBatch s;
  s.packed = pack_trajectories(batch, l.pad_id, device);
  const auto& mask = s.packed.mask;
  torch::Tensor ref_logprobs;
  {
    torch::NoGradGuard no_grad;
    auto current = score_all(l, &l.value_head, batch, s.packed);
    s.old_logprobs = current.logprobs;
    s.old_values = current.values;
    models::ReferencePolicy reference(l.policy);
    ref_logprobs = score_all(l, nullptr, batch, s.packed).logprobs;
  }
  // The learner must see the tokens the sampler drew with the probabilities it drew them with:
  // a shift, a packing error or weights the rollout did not use show up here first.
  auto gap = (sampler_logprobs(batch, s.packed) - s.old_logprobs).abs();
  stats.logprob_gap_max =
      torch::where(mask.to(torch::kBool), gap, torch::zeros_like(gap)).max().item<double>();
  stats.logprob_gap_mean = masked_mean(gap, mask).item<double>();
  if (c.max_logprob_gap > 0 && !(stats.logprob_gap_max <= c.max_logprob_gap)) {
    char text[400];
    std::snprintf(text, sizeof text,
                  "ppo: iteration %lld: the learner's log-probabilities of the sampled tokens "
                  "differ from the sampler's by up to %.4g nats (mean %.4g), over "
                  "ppo.max_logprob_gap = %.4g; the trajectories and the learner disagree on the "
                  "tokens, their positions or the weights, so the update was not made",
                  (long long)iteration, stats.logprob_gap_max, stats.logprob_gap_mean,
                  c.max_logprob_gap);
    throw Error(text);
  }
  const auto estimator = c.kl_estimator;
  auto kl = kl_per_token(s.old_logprobs, ref_logprobs, estimator);
  auto per_sequence = [&](KlEstimator e) {
    return masked_sum(kl_per_token(s.old_logprobs, ref_logprobs, e), mask, 1).mean().item<double>();
  };
  stats.kl_k1 = per_sequence(KlEstimator::k1);
  stats.kl_k3 = per_sequence(KlEstimator::k3);
  auto scores = torch::tensor(batch.scores, torch::kFloat64).to(torch::kFloat32).to(device);
  auto rewards = token_rewards(scores, kl, mask, l.kl.beta);
  auto advantage = gae(rewards, s.old_values, mask, c.gamma, c.lam);
  s.advantages = whiten(advantage.advantages, mask);
  s.returns = advantage.returns;
  stats.kl = masked_sum(kl, mask, 1).mean().item<double>();
  stats.beta = l.kl.beta;
  stats.reward_mean = scores.mean().item<double>();
  stats.reward_std = B > 1 ? scores.std().item<double>() : 0.0;
  stats.precision_mean = mean_of(batch.precisions);
  stats.recall_mean = mean_of(batch.recalls);
  std::vector<double> cut(batch.truncated.begin(), batch.truncated.end());
  stats.truncated_share = mean_of(cut);
  std::tie(stats.advantage_mean, stats.advantage_std) = masked_mean_std(advantage.advantages, mask);
  std::tie(stats.return_mean, stats.return_std) = masked_mean_std(s.returns, mask);
  stats.explained_variance = explained_variance(s.old_values, s.returns, mask);
  stats.answer_words = mean_of(batch.answer_words);
  stats.response_tokens = mask.sum().item<double>() / double(B);
  double prompt_tokens = 0;
  for (const auto& p : batch.prompts) prompt_tokens += double(p.size());
  stats.prompt_tokens = prompt_tokens / double(B);
  stats.sequences = B;
  stats.reference_value_seconds = seconds_since(start);
  return s;
}

namespace {

// What the learners add up after each minibatch besides the gradients: the statistics, each
// already weighted by the learner's share of the minibatch's tokens, and a non-finite flag.
enum Slot { kPolicy, kValue, kEntropy, kClip, kValueClip, kApproxKl, kNonFinite, kSlots };

// Sums the learners' gradients and `local` statistics in one collective; the summed gradients
// replace each parameter's own.
// 0..n-1 in the order one PPO epoch visits the rows.
std::vector<int64_t> shuffled_rows(int64_t n, data::Rng& rng) {
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  data::shuffle_in_place(order, rng);
  return order;
}

// The learners' gradients and minibatch sums added up in one collective.
void sum_over_learners(const LearnerShare& share, const std::vector<torch::Tensor>& params,
                       const double (&local)[kSlots], double (&total)[kSlots],
                       const std::string& phase) {
  std::vector<double> sums(local, local + kSlots);
  all_reduce_gradients(params, sums, share.all_reduce_sum, phase);
  std::copy(sums.begin(), sums.end(), total);
}

}  // namespace

PpoStats ppo_update(PpoLearner& l, const Trajectories& batch, uint64_t shuffle_seed,
                    int64_t iteration, const LearnerShare& share, const std::string& phase,
                    const PhaseReport& report) {
  const auto& c = l.config;
  const torch::Device device = l.params.front().device();
  const int64_t B = int64_t(batch.prompts.size());
  const bool several = share.count > 1;
  PpoStats stats;
  set_learning_rate(l, iteration);
  stats.lr = ppo_learning_rate(c, iteration);
  // Every learner scores the whole batch, so advantages and statistics are the same on all.
  const auto scored = score_batch(l, batch, stats, iteration);
  const auto& [packed, old_logprobs, old_values, advantages, returns] = scored;
  const auto& mask = packed.mask;
  const int64_t per_epoch = (B + c.minibatch_size - 1) / std::max<int64_t>(1, c.minibatch_size);
  const int64_t updates = c.ppo_epochs * per_epoch;
  if (report)
    report("log-probs, reference and values of " + std::to_string(B) + " answers in " +
           format_duration(stats.reference_value_seconds) + "; " + std::to_string(updates) +
           " minibatch updates next");

  auto start = std::chrono::steady_clock::now();
  auto minibatch_start = start;
  data::Rng rng(shuffle_seed);
  double sums[kSlots] = {};
  for (int64_t epoch = 0; epoch < c.ppo_epochs && !stats.early_stopped; ++epoch) {
    const std::vector<int64_t> order = shuffled_rows(B, rng);
    for (int64_t begin = 0; begin < B; begin += c.minibatch_size) {
      const int64_t end = std::min(B, begin + int64_t(c.minibatch_size));
      auto minibatch = torch::tensor(
          std::vector<int64_t>(order.begin() + begin, order.begin() + end), torch::kInt64);
      // This learner's rows of the minibatch (all of them for a single learner).
      auto [first, last] = shard_range(end - begin, share.count, share.index);
      auto rows = minibatch.narrow(0, first, last - first).to(device);
      auto m = mask.index_select(0, rows);
      auto out = policy_outputs(l.policy, &l.value_head, packed, rows, c.temperature);
      auto pl = policy_loss(out.logprobs, old_logprobs.index_select(0, rows),
                            advantages.index_select(0, rows), m, c.clip_range);
      auto vl = value_loss(out.values, old_values.index_select(0, rows),
                           returns.index_select(0, rows), m, c.clip_range_value);
      auto entropy = entropy_from_logits(out.logits, m);
      if (stats.minibatch_updates == 0) stats.first_ratio_deviation = pl.ratio_max_deviation;
      auto loss = pl.loss + c.value_coef * vl.loss - c.entropy_coef * entropy;
      // Several learners scale their loss by their share of the minibatch's tokens, so the summed
      // gradient is the single learner's up to summation order.
      double weight = 1.0;
      if (several) {
        const double tokens = mask.index_select(0, minibatch.to(device)).sum().item<double>();
        weight = m.sum().item<double>() / tokens;
        loss = loss * weight;
      }
      if (nan_injected_at("ppo", iteration)) loss = loss * std::nan("");
      const bool finite = all_finite(loss);
      if (!finite && !several)
        throw Error("ppo: non-finite loss at iteration " + std::to_string(iteration) + " (policy " +
                    std::to_string(pl.loss.item<double>()) + ", value " +
                    std::to_string(vl.loss.item<double>()) +
                    "); the update was stopped and the last checkpoint is intact");
      l.optimizer->zero_grad();
      if (finite) loss.backward();
      const double local[kSlots] = {weight * pl.loss.item<double>(),
                                    weight * vl.loss.item<double>(),
                                    weight * entropy.item<double>(),
                                    weight * pl.clip_fraction,
                                    weight * vl.clip_fraction,
                                    weight * pl.approx_kl,
                                    finite ? 0.0 : 1.0};
      double total[kSlots];
      std::copy(local, local + kSlots, total);
      if (several)
        sum_over_learners(share, l.params, local, total,
                          phase + " (epoch " + std::to_string(epoch + 1) + ", rows " +
                              std::to_string(begin) + "+)");
      if (total[kNonFinite] > 0)
        throw Error("ppo: non-finite loss at iteration " + std::to_string(iteration) + " on " +
                    std::to_string(int(total[kNonFinite])) +
                    " learner(s); the update was stopped and the last checkpoint is intact");
      if (c.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(l.params, c.max_grad_norm);
      l.optimizer->step();
      ++stats.minibatch_updates;
      if (report) {
        report("minibatch update " + std::to_string(stats.minibatch_updates) + "/" +
               std::to_string(updates) + " in " + format_duration(seconds_since(minibatch_start)));
        minibatch_start = std::chrono::steady_clock::now();
      }
      for (int k = 0; k < kNonFinite; ++k) sums[k] += total[k];
      if (c.kl_stop > 0 && kl_early_stop(total[kApproxKl], c.kl_stop)) {
        stats.early_stopped = true;
        break;
      }
    }
  }
  const double n = double(std::max<int64_t>(1, stats.minibatch_updates));
  stats.policy_loss = sums[kPolicy] / n;
  stats.value_loss = sums[kValue] / n;
  stats.entropy = sums[kEntropy] / n;
  stats.clip_fraction = sums[kClip] / n;
  stats.value_clip_fraction = sums[kValueClip] / n;
  stats.approx_kl = sums[kApproxKl] / n;
  l.kl.update(stats.kl, B);
  l.policy->gradient_checkpointing = false;
  stats.update_seconds = seconds_since(start);
  return stats;
}

}  // namespace citeforge::trainer
