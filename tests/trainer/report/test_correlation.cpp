// Table 3's statistics: Pearson r and its two-sided p-value (values checked against a direct
// numerical integration of Student's t density, which is what scipy.stats.pearsonr reports).
#include <catch2/catch.hpp>
#include <cmath>

#include "common/error.h"
#include "trainer/report/correlation.h"

using namespace citeforge::trainer;

TEST_CASE("regularized incomplete beta on a binomial identity", "[trainer][tables]") {
  // I_x(a, n - a + 1) = P(Binomial(n, x) >= a): I_0.4(2, 3) = 6*.16*.36 + 4*.064*.6 + .0256.
  CHECK(regularized_incomplete_beta(2, 3, 0.4) == Approx(0.5248).epsilon(1e-12));
  CHECK(regularized_incomplete_beta(1, 1, 0.3) == Approx(0.3).epsilon(1e-12));
  CHECK(regularized_incomplete_beta(2, 3, 0.0) == 0.0);
  CHECK(regularized_incomplete_beta(2, 3, 1.0) == 1.0);
  CHECK_THROWS_AS(regularized_incomplete_beta(-1, 3, 0.5), citeforge::Error);
}

TEST_CASE("Pearson r and p-value", "[trainer][tables]") {
  auto result = pearson({1, 2, 3, 4, 5}, {2, 4, 5, 4, 5});
  CHECK(result.n == 5);
  CHECK(result.r == Approx(0.7745966692414834).epsilon(1e-12));
  CHECK(result.p == Approx(0.12402706265754836).epsilon(1e-9));
  auto perfect = pearson({1, 2, 3}, {-2, -4, -6});
  CHECK(perfect.r == Approx(-1.0));
  CHECK(perfect.p == Approx(0.0).margin(1e-12));
  CHECK(std::isnan(pearson({1, 2}, {3, 4}).r));        // too few pairs
  CHECK(std::isnan(pearson({1, 2, 3}, {5, 5, 5}).r));  // constant series
  CHECK_THROWS_AS(pearson({1, 2, 3}, {1, 2}), citeforge::Error);
}
