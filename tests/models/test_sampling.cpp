#include <ATen/CPUGeneratorImpl.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "common/error.h"
#include "models/sampling.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {
int64_t draw_one(std::vector<float> probs, double u) {
  auto p = torch::tensor(probs).unsqueeze(0);
  return models::draw_by_inverse_cdf(p, {u}).item<int64_t>();
}
}  // namespace

TEST_CASE("the inverse-CDF draw picks the token whose interval holds the uniform",
          "[models][sampling]") {
  // Cumulative 0.1, 0.1, 0.5, 0.7, 1.0: each token owns [before, before + p).
  const std::vector<float> p{0.1f, 0.0f, 0.4f, 0.2f, 0.3f};
  CHECK(draw_one(p, 0.0) == 0);
  CHECK(draw_one(p, 0.05) == 0);
  CHECK(draw_one(p, 0.15) == 2);  // token 1 has probability 0: its interval is empty
  CHECK(draw_one(p, 0.6) == 3);
  CHECK(draw_one(p, 0.95) == 4);
  // A uniform of 0 must not land on a leading token of probability 0 (a search for the first
  // cumulative value >= 0 would), and one just below 1 not on a trailing one or past the end
  // (u x total can round up to the total).
  CHECK(draw_one({0.0f, 0.0f, 1.0f}, 0.0) == 2);
  CHECK(draw_one({0.3f, 0.7f, 0.0f, 0.0f}, 1.0 - 0x1.0p-53) == 1);
  // Unnormalised rows are drawn in proportion to their entries.
  CHECK(draw_one({2.0f, 6.0f}, 0.24) == 0);
  CHECK(draw_one({2.0f, 6.0f}, 0.26) == 1);
}

TEST_CASE("seeded inverse-CDF draws follow the distribution, row by row", "[models][sampling]") {
  // Two rows with different distributions, 40000 draws each from their own seeded generators;
  // Pearson's chi-square against the expected counts stays under its 0.001 quantile (16.27 for
  // 3 degrees of freedom, 13.82 for 2). The seeds are fixed, so this cannot flake; a draw that
  // favoured either end of an interval, or mixed the rows up, would fail it.
  const std::vector<std::vector<float>> rows{{0.1f, 0.0f, 0.4f, 0.2f, 0.3f},
                                             {0.0f, 0.5f, 0.25f, 0.25f, 0.0f}};
  auto probs = torch::tensor(rows[0]).unsqueeze(0);
  probs = torch::cat({probs, torch::tensor(rows[1]).unsqueeze(0)});
  std::vector<at::Generator> gens{at::detail::createCPUGenerator(11),
                                  at::detail::createCPUGenerator(12)};
  const int n = 40000;
  std::vector<std::vector<int>> counts(2, std::vector<int>(5, 0));
  for (int k = 0; k < n; ++k) {
    std::vector<double> u{models::next_uniform(gens[0]), models::next_uniform(gens[1])};
    auto drawn = models::draw_by_inverse_cdf(probs, u);
    for (int r = 0; r < 2; ++r) ++counts[size_t(r)][size_t(drawn[r].item<int64_t>())];
  }
  const double quantile[2] = {16.27, 13.82};
  for (int r = 0; r < 2; ++r) {
    double chi2 = 0;
    for (int t = 0; t < 5; ++t) {
      const double expected = n * rows[size_t(r)][size_t(t)];
      if (expected == 0) {
        CHECK(counts[size_t(r)][size_t(t)] == 0);
        continue;
      }
      const double d = counts[size_t(r)][size_t(t)] - expected;
      chi2 += d * d / expected;
    }
    INFO("row " << r << " chi-square " << chi2);
    CHECK(chi2 < quantile[r]);
  }
}

TEST_CASE("over a model-sized vocabulary the draws follow the distribution", "[models][sampling]") {
  // 4096 tokens with a long tail (softmax of 3 x normal noise), as a language model's next-token
  // distribution has: 40000 draws binned into the 30 most likely tokens, one by one, and the
  // rest. Pearson's chi-square (30 degrees of freedom) stays under its 0.001 quantile, 59.70.
  torch::manual_seed(21);
  const int64_t vocab = 4096, draws = 40000, chunk = 2000, bins = 30;
  auto probs = torch::softmax(torch::randn({vocab}) * 3, -1);
  auto [top, order] = probs.topk(bins);
  auto bin_of = torch::full({vocab}, bins, torch::kInt64);
  bin_of.index_put_({order}, torch::arange(bins));
  std::vector<double> expected(size_t(bins + 1), 0.0), seen(size_t(bins + 1), 0.0);
  for (int64_t t = 0; t < vocab; ++t)
    expected[size_t(bin_of[t].item<int64_t>())] += draws * probs[t].item<double>();
  auto gen = at::detail::createCPUGenerator(4);
  const auto rows = probs.unsqueeze(0).expand({chunk, vocab}).contiguous();
  for (int64_t done = 0; done < draws; done += chunk) {
    std::vector<double> u;
    for (int64_t r = 0; r < chunk; ++r) u.push_back(models::next_uniform(gen));
    auto drawn = bin_of.index_select(0, models::draw_by_inverse_cdf(rows, u));
    auto acc = drawn.accessor<int64_t, 1>();
    for (int64_t r = 0; r < chunk; ++r) seen[size_t(acc[r])] += 1;
  }
  double chi2 = 0;
  for (int64_t b = 0; b <= bins; ++b) {
    REQUIRE(expected[size_t(b)] > 5);  // the test's own premise
    const double d = seen[size_t(b)] - expected[size_t(b)];
    chi2 += d * d / expected[size_t(b)];
  }
  INFO("chi-square " << chi2 << ", the most likely token's share " << top[0].item<double>());
  CHECK(chi2 < 59.70);
}

TEST_CASE("uniforms come from the row's generator: 53 bits, below 1, repeatable",
          "[models][sampling]") {
  auto a = at::detail::createCPUGenerator(5);
  auto b = at::detail::createCPUGenerator(5);
  double sum = 0;
  for (int k = 0; k < 10000; ++k) {
    const double u = models::next_uniform(a);
    CHECK(u == models::next_uniform(b));
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  // The mean of 10000 uniforms has standard deviation 0.0029; 0.5 +- 0.015 is five of them.
  CHECK(std::abs(sum / 10000 - 0.5) < 0.015);
}

TEST_CASE("top-p keeps the smallest head of the distribution that reaches p",
          "[models][sampling]") {
  auto logits = torch::log(torch::tensor({0.2f, 0.5f, 0.3f})).unsqueeze(0);
  // Sorted 0.5, 0.3, 0.2: the mass before them is 0, 0.5, 0.8, so p = 0.6 keeps the first two.
  auto kept = models::sampling_probs(logits, 1.0, 0.6)[0];
  CHECK(kept[0].item<float>() == 0.0f);
  CHECK(kept[1].item<float>() == Approx(0.625));
  CHECK(kept[2].item<float>() == Approx(0.375));
  auto all = models::sampling_probs(logits, 1.0, 1.0)[0];
  CHECK(all[0].item<float>() == Approx(0.2));
  // Temperature 2 flattens: softmax(log p / 2) is proportional to sqrt(p).
  auto warm = models::sampling_probs(logits, 2.0, 1.0)[0];
  const double z = std::sqrt(0.2) + std::sqrt(0.5) + std::sqrt(0.3);
  CHECK(warm[1].item<float>() == Approx(std::sqrt(0.5) / z));
}

TEST_CASE("non-finite probabilities are an error, not a token", "[models][sampling][errors]") {
  auto p = torch::tensor({0.5f, NAN, 0.5f}).unsqueeze(0);
  CHECK_THROWS_WITH(models::draw_by_inverse_cdf(p, {0.3}), Contains("not finite"));
  CHECK_THROWS_WITH(models::draw_by_inverse_cdf(torch::zeros({1, 3}), {0.3}),
                    Contains("not finite"));
  CHECK_THROWS_AS(models::draw_by_inverse_cdf(torch::ones({2, 3}), {0.3}), Error);
}

TEST_CASE("on a GPU the draw equals the CPU's for the same uniforms", "[models][sampling][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device: the GPU draw is checked on a GPU machine (scripts/gpu_check.sh)");
    return;
  }
  torch::manual_seed(3);
  auto probs = torch::softmax(torch::randn({64, 32000}) * 4, -1);
  auto gen = at::detail::createCPUGenerator(9);
  std::vector<double> u;
  for (int r = 0; r < 64; ++r) u.push_back(models::next_uniform(gen));
  auto on_cpu = models::draw_by_inverse_cdf(probs, u);
  auto on_gpu = models::draw_by_inverse_cdf(probs.to(torch::kCUDA), u);
  CHECK(on_gpu.device().is_cuda());
  // The GPU may add the fp64 cumulative sums in another order (differences near 1e-16): only a
  // uniform that close to the end of a token's interval could then draw its neighbour.
  CHECK(torch::equal(on_gpu.cpu(), on_cpu));
}
