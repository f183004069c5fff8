// citeforge holm: a hand-made family whose adjusted p-values are worked out below, and one-line
// errors for what is not a p-value.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.h"

using namespace citeforge;
using Catch::Matchers::Contains;

TEST_CASE("holm: a family's p-values adjusted in the order given", "[cli][holm]") {
  // A family of 5, sorted: 0.005 x 5 = 0.025, 0.01 x 4 = 0.04, 0.03 x 3 = 0.09, 0.04 x 2 =
  // 0.08 -> 0.09 (never below the one before), 0.5 x 1 = 0.5.
  auto r = testing::run_citeforge("holm 0.01 0.04 0.03 0.005 0.5");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto out = nlohmann::json::parse(
      r.output.substr(r.output.find('{'), r.output.rfind('}') - r.output.find('{') + 1));
  const std::vector<double> expected{0.04, 0.09, 0.09, 0.025, 0.5};
  REQUIRE(out["p_holm"].size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    CHECK(out["p_holm"][i].get<double>() == Approx(expected[i]));
  CHECK(out["p"][1].get<double>() == Approx(0.04));

  auto bad = testing::run_citeforge("holm 0.01 1.5");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Contains("p-value 2") && Contains("'1.5'"));
  CHECK_THAT(testing::run_citeforge("holm 0.01 abc").output, Contains("'abc'"));
  CHECK(testing::run_citeforge("holm").exit_code != 0);
}
