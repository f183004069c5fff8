// PPO's update with several learners (data parallel). Every learner holds the whole batch and
// scores it as ppo_update does (behaviour, reference and value passes, KL-shaped rewards, GAE,
// whitening), so advantages and statistics are those of the single-process update bit for bit;
// the costly part, forward and backward over each minibatch, is split: each learner takes its
// share of the minibatch's rows, scales its loss by its share of the minibatch's tokens, and
// the gradients are summed over the learners before the one optimiser step every learner takes.
// The sum equals the single-process gradient up to floating-point summation order.
#pragma once

#include <functional>
#include <string>

#include "trainer/ppo_learner.h"

namespace citeforge::trainer {

struct LearnerShare {
  int index = 0;  // this learner's position among the learners
  int count = 1;
  // In-place sum over the learners; `phase` names the collective in failure messages.
  std::function<void(torch::Tensor& values, const std::string& phase)> all_reduce_sum;
};

// ppo_update over several learners; `phase` prefixes the collectives' names.
PpoStats ppo_update_data_parallel(PpoLearner& learner, const Trajectories& batch,
                                  uint64_t shuffle_seed, int64_t iteration,
                                  const LearnerShare& share, const std::string& phase);

}  // namespace citeforge::trainer
