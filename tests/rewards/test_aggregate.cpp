#include <catch2/catch.hpp>
#include <cmath>

#include "rewards/aggregate.h"

using namespace citeforge::rewards;

TEST_CASE("aggregate: mean and count", "[aggregate]") {
  auto a = aggregate({1, 0, 1, 1});
  CHECK(a.mean == Approx(0.75));
  CHECK(a.count == 4);
  CHECK(a.ci_low <= a.mean);
  CHECK(a.ci_high >= a.mean);
  CHECK(a.ci_low >= 0);
  CHECK(a.ci_high <= 1);
}

TEST_CASE("aggregate: constant and single values give a zero-width interval", "[aggregate]") {
  auto c = aggregate({0.3, 0.3, 0.3});
  CHECK(c.ci_low == Approx(0.3));
  CHECK(c.ci_high == Approx(0.3));
  auto one = aggregate({2.5});
  CHECK(one.mean == 2.5);
  CHECK(one.ci_low == 2.5);
  CHECK(one.ci_high == 2.5);
}

TEST_CASE("aggregate: empty input is count 0 and NaN", "[aggregate]") {
  auto a = aggregate({});
  CHECK(a.count == 0);
  CHECK(std::isnan(a.mean));
  CHECK(std::isnan(a.ci_low));
  CHECK(std::isnan(a.ci_high));
}

TEST_CASE("aggregate: the bootstrap is seeded and deterministic", "[aggregate]") {
  std::vector<double> v;
  for (int i = 0; i < 50; ++i) v.push_back((i * 37) % 11 / 10.0);
  auto a = aggregate(v, 7), b = aggregate(v, 7), c = aggregate(v, 8);
  CHECK(a.ci_low == b.ci_low);
  CHECK(a.ci_high == b.ci_high);
  CHECK((a.ci_low != c.ci_low || a.ci_high != c.ci_high));
  CHECK(a.mean == c.mean);  // the mean does not depend on the seed
}

TEST_CASE("aggregate: interval width matches the normal approximation", "[aggregate]") {
  // 400 Bernoulli(0.5) values: the 95% interval is about mean ± 1.96 * sqrt(0.25 / 400) = ± 0.049.
  std::vector<double> v;
  for (int i = 0; i < 400; ++i) v.push_back(i % 2);
  auto a = aggregate(v);
  CHECK(a.mean == Approx(0.5));
  CHECK(a.ci_high - a.ci_low == Approx(0.098).margin(0.012));
  CHECK((a.ci_low + a.ci_high) / 2 == Approx(0.5).margin(0.01));
}

TEST_CASE("aggregate: pinned interval for the default seed", "[aggregate]") {
  // Guards the generator and the percentile definition: a change here changes every reported
  // CI, so it must be deliberate.
  std::vector<double> v;
  for (int i = 0; i < 50; ++i) v.push_back((i * 37) % 11 / 10.0);
  auto a = aggregate(v);
  CHECK(a.mean == Approx(0.494).epsilon(1e-12));
  CHECK(a.ci_low == Approx(0.4020).epsilon(1e-9));
  CHECK(a.ci_high == Approx(0.5821).epsilon(1e-9));
}

TEST_CASE("aggregate: resamples must be positive", "[aggregate]") {
  CHECK_THROWS_WITH(aggregate({1.0}, 1, 0), "bootstrap: resamples must be at least 1");
}

// The paired test on cases small enough to count by hand.
TEST_CASE("paired test: difference, interval and exact sign-flip p by hand",
          "[aggregate][paired]") {
  // Five questions, the model one point better on each: of the 2^5 sign patterns only the two
  // all-equal ones reach |sum| = 5, so p = 2/32. Every resample of five +1s has mean 1.
  auto all_better = paired_test({1, 1, 1, 1, 1}, {0, 0, 0, 0, 0});
  CHECK(all_better.difference == 1);
  CHECK(all_better.count == 5);
  CHECK(all_better.ci_low == 1);
  CHECK(all_better.ci_high == 1);
  CHECK(all_better.p_value == Approx(2.0 / 32));

  // Differences 1, 1, -1, 0.5 and a tie (0): |sum| 1.5. Of the 16 sign patterns of the four
  // non-zero differences, 10 reach |sum| >= 1.5 (listed outside the code with itertools). The
  // tie is not flipped but still counts as a pair.
  auto mixed = paired_test({1, 1, 0, 0.5, 0.3}, {0, 0, 1, 0, 0.3});
  CHECK(mixed.count == 5);
  CHECK(mixed.difference == Approx(1.5 / 5));
  CHECK(mixed.p_value == Approx(10.0 / 16));
  CHECK(mixed.ci_low < 0);
  CHECK(mixed.ci_high > 0);
}

TEST_CASE("paired test: not-applicable pairs are left out, bad input is an error",
          "[aggregate][paired]") {
  const double nan = std::nan("");
  auto t = paired_test({1, nan, 1}, {0, 0, nan});
  CHECK(t.count == 1);
  CHECK(t.difference == 1);
  CHECK(t.p_value == Approx(1.0));  // one pair: both signs reach |1|
  auto none = paired_test({nan}, {0});
  CHECK(none.count == 0);
  CHECK(std::isnan(none.difference));
  CHECK(std::isnan(none.p_value));
  CHECK_THROWS_WITH(paired_test({1, 2}, {1}), Catch::Contains("2 scores against 1"));
  auto equal = paired_test({0.5, 0.5}, {0.5, 0.5});
  CHECK(equal.difference == 0);
  CHECK(equal.p_value == 1);  // no non-zero difference: the empty flip sum equals the observed
}

TEST_CASE("paired test: the Monte Carlo sign flip agrees with the normal approximation",
          "[aggregate][paired]") {
  // 200 differences of +-1 with 120 positive: sum 40, sd of the flipped sum sqrt(200) = 14.14,
  // z = 2.83, two-sided p = 0.0047. With 10000 draws the estimate's sd is about 0.0007.
  std::vector<double> a(200, 0), b(200, 0);
  for (int i = 0; i < 200; ++i) (i < 120 ? a : b)[i] = 1;
  auto t = paired_test(a, b);
  CHECK(t.difference == Approx(0.2));
  CHECK(t.p_value == Approx(0.0047).margin(0.003));
  CHECK(t.ci_low > 0);
  auto same = paired_test(a, b);
  CHECK(same.p_value == t.p_value);  // seeded
  // No difference in direction: about half the draws are as extreme as sum 0.
  std::vector<double> c(200, 0);
  for (int i = 0; i < 200; ++i) c[i] = i % 2;
  std::vector<double> d(200, 0);
  for (int i = 0; i < 200; ++i) d[i] = 1 - c[i];
  CHECK(paired_test(c, d).p_value == Approx(1.0));
}

TEST_CASE("Holm adjustment by hand", "[aggregate][paired]") {
  // m = 4: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04, then made
  // non-decreasing: 0.02, 0.03, 0.06, 0.06.
  auto adjusted = holm_adjusted({0.01, 0.04, 0.03, 0.005});
  REQUIRE(adjusted.size() == 4);
  CHECK(adjusted[0] == Approx(0.03));
  CHECK(adjusted[1] == Approx(0.06));
  CHECK(adjusted[2] == Approx(0.06));
  CHECK(adjusted[3] == Approx(0.02));
  // NaN is outside the family (m = 2 here) and the cap is 1.
  auto capped = holm_adjusted({0.6, std::nan(""), 0.2});
  CHECK(capped[0] == Approx(0.6));
  CHECK(std::isnan(capped[1]));
  CHECK(capped[2] == Approx(0.4));
  CHECK(holm_adjusted({0.7, 0.8})[1] == 1.0);
}
