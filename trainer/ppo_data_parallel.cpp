#include "trainer/ppo_data_parallel.h"

#include <chrono>

#include "common/error.h"
#include "common/fault.h"
#include "data/random.h"
#include "trainer/dist_env.h"

namespace citeforge::trainer {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What the learners add up after each minibatch besides the gradients: the statistics, each
// already weighted by the learner's share of the minibatch's tokens, and a non-finite flag.
enum Slot { kPolicy, kValue, kEntropy, kClip, kValueClip, kApproxKl, kNonFinite, kSlots };

}  // namespace

PpoStats ppo_update_data_parallel(PpoLearner& l, const Trajectories& batch, uint64_t shuffle_seed,
                                  int64_t iteration, const LearnerShare& share,
                                  const std::string& phase) {
  const auto& c = l.config;
  const torch::Device device = l.params.front().device();
  const int64_t B = int64_t(batch.prompts.size());
  PpoStats stats;
  set_learning_rate(l, iteration);
  stats.lr = ppo_learning_rate(c, iteration);
  // The scoring pass of ppo_update, on the whole batch (see the header for why).
  const auto scored = score_batch(l, batch, stats, iteration);
  const auto& [packed, old_logprobs, old_values, advantages, returns] = scored;
  const auto& mask = packed.mask;

  auto start = std::chrono::steady_clock::now();
  data::Rng rng(shuffle_seed);
  double sums[kSlots] = {};
  for (int64_t epoch = 0; epoch < c.ppo_epochs && !stats.early_stopped; ++epoch) {
    std::vector<int64_t> order(B);
    for (int64_t i = 0; i < B; ++i) order[i] = i;
    data::shuffle_in_place(order, rng);
    for (int64_t begin = 0; begin < B; begin += c.minibatch_size) {
      const int64_t end = std::min(B, begin + int64_t(c.minibatch_size));
      auto [first, last] = shard_range(end - begin, share.count, share.index);
      auto minibatch = torch::tensor(
          std::vector<int64_t>(order.begin() + begin, order.begin() + end), torch::kInt64);
      auto rows = minibatch.narrow(0, first, last - first).to(device);
      auto m = mask.index_select(0, rows);
      const double tokens = mask.index_select(0, minibatch.to(device)).sum().item<double>();
      const double weight = m.sum().item<double>() / tokens;  // this learner's share of them
      auto out = policy_outputs(l.policy, &l.value_head, packed, rows, c.temperature);
      auto pl = policy_loss(out.logprobs, old_logprobs.index_select(0, rows),
                            advantages.index_select(0, rows), m, c.clip_range);
      auto vl = value_loss(out.values, old_values.index_select(0, rows),
                           returns.index_select(0, rows), m, c.clip_range_value);
      auto entropy = entropy_from_logits(out.logits, m);
      // This learner's rows only: a maximum does not add up across learners.
      if (stats.minibatch_updates == 0) stats.first_ratio_deviation = pl.ratio_max_deviation;
      auto loss = (pl.loss + c.value_coef * vl.loss - c.entropy_coef * entropy) * weight;
      if (nan_injected_at("ppo", iteration)) loss = loss * std::nan("");
      const bool finite = all_finite(loss);
      l.optimizer->zero_grad();
      if (finite) loss.backward();
      // One collective per minibatch: the gradients, then the weighted statistics.
      std::vector<torch::Tensor> parts;
      for (auto& p : l.params)
        parts.push_back(p.grad().defined() ? p.grad().to(torch::kFloat32).reshape(-1)
                                           : torch::zeros({p.numel()}, torch::kFloat32).to(device));
      const double local[kSlots] = {weight * pl.loss.item<double>(),
                                    weight * vl.loss.item<double>(),
                                    weight * entropy.item<double>(),
                                    weight * pl.clip_fraction,
                                    weight * vl.clip_fraction,
                                    weight * pl.approx_kl,
                                    finite ? 0.0 : 1.0};
      parts.push_back(torch::tensor(std::vector<double>(local, local + kSlots), torch::kFloat64)
                          .to(torch::kFloat32)
                          .to(device));
      auto flat = torch::cat(parts);
      share.all_reduce_sum(flat, phase + " (epoch " + std::to_string(epoch + 1) + ", rows " +
                                     std::to_string(begin) + "+)");
      flat = flat.cpu();
      int64_t at = 0;
      {
        torch::NoGradGuard no_grad;
        for (auto& p : l.params) {
          auto summed =
              flat.narrow(0, at, p.numel()).view(p.sizes()).to(p.device(), p.scalar_type());
          if (p.grad().defined())
            p.mutable_grad().copy_(summed);
          else
            p.mutable_grad() = summed.clone();  // not a view of `flat`
          at += p.numel();
        }
      }
      double total[kSlots];
      for (int k = 0; k < kSlots; ++k) total[k] = flat[at + k].item<double>();
      if (total[kNonFinite] > 0)
        throw Error("ppo: non-finite loss at iteration " + std::to_string(iteration) + " on " +
                    std::to_string(int(total[kNonFinite])) +
                    " learner(s); the update was stopped and the last checkpoint is intact");
      if (c.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(l.params, c.max_grad_norm);
      l.optimizer->step();
      ++stats.minibatch_updates;
      for (int k = 0; k < kNonFinite; ++k) sums[k] += total[k];
      if (c.kl_stop > 0 && total[kApproxKl] > c.kl_stop) {
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
