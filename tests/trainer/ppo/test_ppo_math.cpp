// PPO's numerical core on small cases worked out by hand (the expected numbers are derived in
// the comments), so a sign or an off-by-one in GAE, the KL terms or the clipping shows up.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "trainer/ppo/ppo_math.h"

using namespace citeforge::trainer;
using Catch::Matchers::Contains;

namespace {

torch::Tensor row(std::vector<float> v) {
  return torch::tensor(v).unsqueeze(0);
}

void check_close(const torch::Tensor& actual, std::vector<float> expected, double tol = 1e-5) {
  auto e = torch::tensor(expected).view(actual.sizes());
  INFO("actual " << actual << "\nexpected " << e);
  CHECK(torch::allclose(actual.to(torch::kFloat32), e, 0, tol));
}

}  // namespace

TEST_CASE("KL per token: k1 is the log-ratio, k3 the non-negative estimator", "[trainer][ppo]") {
  auto logp = row({-1.0f, -2.0f});
  auto ref = row({-1.5f, -1.0f});
  // k1 = logp - ref.
  check_close(kl_per_token(logp, ref, KlEstimator::k1), {0.5f, -1.0f});
  // k3 = (r - 1) - log r with r = exp(ref - logp): r = e^-0.5 = 0.606531 gives
  // -0.393469 + 0.5 = 0.106531; r = e^1 gives 1.718282 - 1 = 0.718282.
  check_close(kl_per_token(logp, ref, KlEstimator::k3), {0.106531f, 0.718282f});
}

TEST_CASE("token rewards: -beta KL everywhere, the score on the last real token",
          "[trainer][ppo]") {
  auto scores = torch::tensor({1.0f, 0.5f});
  auto kl = torch::tensor({{0.1f, 0.2f, 0.3f}, {0.4f, 0.5f, 0.6f}});
  auto mask = torch::tensor({{1.0f, 1.0f, 0.0f}, {1.0f, 1.0f, 1.0f}});
  // beta 0.5: row 0 ends at t = 1 (-0.1 + 1.0), row 1 at t = 2 (-0.3 + 0.5); padding is 0.
  check_close(token_rewards(scores, kl, mask, 0.5), {-0.05f, 0.9f, 0.0f, -0.2f, -0.25f, 0.2f});
  auto empty_row = torch::tensor({{1.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 0.0f}});
  CHECK_THROWS_AS(token_rewards(scores, kl, empty_row, 0.5), citeforge::Error);
}

TEST_CASE("GAE by hand", "[trainer][ppo]") {
  // gamma 1, lambda 0.5, values 0.5 0.6 0.7, reward 1 at the end:
  //   t2: delta = 1 - 0.7 = 0.3,            A2 = 0.3
  //   t1: delta = 0 + 0.7 - 0.6 = 0.1,      A1 = 0.1 + 0.5 * 0.3  = 0.25
  //   t0: delta = 0 + 0.6 - 0.5 = 0.1,      A0 = 0.1 + 0.5 * 0.25 = 0.225
  auto full = gae(row({0, 0, 1}), row({0.5f, 0.6f, 0.7f}), row({1, 1, 1}), 1.0, 0.5);
  check_close(full.advantages, {0.225f, 0.25f, 0.3f});
  check_close(full.returns, {0.725f, 0.85f, 1.0f});
  // gamma 0.9, lambda 1, the episode ends at t1 (t2 is padding holding garbage):
  //   t1: delta = 1 - 0.6 = 0.4,            A1 = 0.4
  //   t0: delta = 0.9 * 0.6 - 0.5 = 0.04,   A0 = 0.04 + 0.9 * 0.4 = 0.4
  const float inf = std::numeric_limits<float>::infinity();
  auto ended = gae(row({0, 1, inf}), row({0.5f, 0.6f, NAN}), row({1, 1, 0}), 0.9, 1.0);
  check_close(ended.advantages, {0.4f, 0.4f, 0.0f});
  CHECK_THROWS_WITH(gae(row({0}), row({0}), row({1}), 1.5, 0.9), Contains("gamma"));
}

TEST_CASE("whitening uses the masked, unbiased variance", "[trainer][ppo]") {
  // mean 2.5, unbiased variance 5/3: (x - 2.5) / sqrt(5/3) = -1.161895, -0.387298, ...
  auto x = row({1, 2, 3, 4, 100});
  auto mask = row({1, 1, 1, 1, 0});
  check_close(whiten(x, mask), {-1.161895f, -0.387298f, 0.387298f, 1.161895f, 0.0f});
  check_close(whiten(x, mask, /*shift_mean=*/false),
              {1.338105f, 2.112702f, 2.887298f, 3.661895f, 0.0f});
  CHECK_THROWS_AS(masked_mean(x, row({0, 0, 0, 0, 0})), citeforge::Error);
}

TEST_CASE("clipped policy loss by hand", "[trainer][ppo]") {
  // r = 1, 1.5, 0.5 with advantages 1, 1, -1 and eps 0.2 (clip to 1, 1.2, 0.8):
  //   t0: max(-1, -1) = -1;  t1: max(-1.5, -1.2) = -1.2 (clipped);  t2: max(0.5, 0.8) = 0.8
  //   (clipped). Loss = (-1 - 1.2 + 0.8) / 3 = -0.466667, clip fraction 2/3.
  //   approx KL = 0.5 * mean(log r ^ 2) = 0.5 * (0 + 0.164402 + 0.480453) / 3 = 0.107476.
  auto logp_new = row({0.0f, std::log(1.5f), std::log(0.5f)}).requires_grad_(true);
  auto result = policy_loss(logp_new, row({0, 0, 0}), row({1, 1, -1}), row({1, 1, 1}), 0.2);
  CHECK(result.loss.item<double>() == Approx(-1.4 / 3).margin(1e-6));
  CHECK(result.clip_fraction == Approx(2.0 / 3));
  CHECK(result.approx_kl == Approx(0.107476).margin(1e-6));
  CHECK(result.ratio_mean == Approx(1.0).margin(1e-6));
  // Only the unclipped token passes a gradient: d/dlogp (-A r) / 3 = -1/3 at t0, 0 elsewhere.
  result.loss.backward();
  check_close(logp_new.grad(), {-1.0f / 3, 0.0f, 0.0f});
}

TEST_CASE("clipped value loss by hand", "[trainer][ppo]") {
  // v_old 0.5, eps 0.2, return 1: v = 1 clips to 0.7: max(0, 0.09) = 0.09 (clipped);
  // v = 0 clips to 0.3: max(1, 0.49) = 1. Loss = 0.5 * (0.09 + 1) / 2 = 0.2725.
  auto result = value_loss(row({1.0f, 0.0f}), row({0.5f, 0.5f}), row({1, 1}), row({1, 1}), 0.2);
  CHECK(result.loss.item<double>() == Approx(0.2725).margin(1e-6));
  CHECK(result.clip_fraction == Approx(0.5));
}

TEST_CASE("entropy and explained variance", "[trainer][ppo]") {
  // Uniform over 2: ln 2. Probabilities 1/4, 3/4 (logits 0, ln 3): 0.562335.
  auto logits = torch::tensor({{{0.0f, 0.0f}, {0.0f, std::log(3.0f)}}});
  check_close(entropy_per_token(logits), {0.693147f, 0.562335f});
  CHECK(entropy_from_logits(logits, row({1, 0})).item<double>() == Approx(0.693147).margin(1e-6));
  auto returns = row({1, 2, 3, 4});
  CHECK(explained_variance(returns, returns, row({1, 1, 1, 1})) == Approx(1.0));
  CHECK(explained_variance(row({2, 2, 2, 2}), returns, row({1, 1, 1, 1})) ==
        Approx(0.0).margin(1e-9));
  CHECK(std::isnan(explained_variance(returns, row({5, 5, 5, 5}), row({1, 1, 1, 1}))));
}

TEST_CASE("the adaptive KL controller brings the KL to its target within a run", "[trainer][ppo]") {
  // A policy whose KL answers the penalty: KL = c / beta, so the target is met at beta = c / 6.
  // The run's horizon: ppo.kl_horizon_iterations (5) x batch 32 sequences, as the learner sets it.
  const int64_t batch = 32, horizon = 5 * batch;
  for (double c : {0.6, 0.15}) {  // the equilibrium beta is 2x and 0.5x the initial 0.05
    auto controller = adaptive_kl_controller(0.05, 6.0, horizon);
    double kl = c / controller.beta;
    for (int it = 0; it < 40; ++it) {
      controller.update(kl, batch);
      kl = c / controller.beta;
    }
    INFO("c = " << c << ", beta = " << controller.beta << ", kl = " << kl);
    CHECK(kl == Approx(6.0).epsilon(0.03));
    CHECK(controller.beta == Approx(c / 6.0).epsilon(0.03));
  }
  // The old default (horizon 10000 sequences) moved beta by at most 0.064% per iteration of
  // 32: after 40 iterations it was still within 3% of where it started, whatever the KL.
  auto old = adaptive_kl_controller(0.05, 6.0, 10000);
  for (int it = 0; it < 40; ++it) old.update(12.0, batch);
  CHECK(old.beta < 0.05 * 1.03);
}

TEST_CASE("the adaptive KL controller follows Ziegler et al.", "[trainer][ppo]") {
  // KL 9 against target 6: e = clip(0.5, -0.2, 0.2) = 0.2, beta *= 1 + 0.2 * 100 / 10000.
  auto adaptive = adaptive_kl_controller(0.1, 6.0, 10000);
  adaptive.update(9.0, 100);
  CHECK(adaptive.beta == Approx(0.1 * 1.002));
  // KL 3: e = clip(-0.5) = -0.2, beta *= 0.998.
  adaptive.update(3.0, 100);
  CHECK(adaptive.beta == Approx(0.1 * 1.002 * 0.998));
  // KL 6.6: e = 0.1, beta *= 1 + 0.1 * 50 / 10000.
  adaptive.update(6.6, 50);
  CHECK(adaptive.beta == Approx(0.1 * 1.002 * 0.998 * 1.0005));
  auto fixed = fixed_kl_controller(0.05);
  fixed.update(100.0, 1000);
  CHECK(fixed.beta == 0.05);
  CHECK_THROWS_AS(adaptive.update(NAN, 1), citeforge::Error);
  CHECK_THROWS_AS(adaptive_kl_controller(0.1, 0.0, 100), citeforge::Error);
  // Early stop at 1.5 x target.
  CHECK(kl_early_stop(0.16, 0.1));
  CHECK_FALSE(kl_early_stop(0.14, 0.1));
  CHECK(kl_early_stop(NAN, 0.1));
}
