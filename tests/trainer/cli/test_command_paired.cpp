// citeforge paired: a hand-made case whose difference and exact sign-flip p-value are worked out
// below, pairing by id across files, and one-line errors for bad records.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

TEST_CASE("paired: the mean difference and its sign-flip p-value, paired by id", "[cli][paired]") {
  const auto dir = testing::temp_dir("paired");
  const auto a = (dir / "a.jsonl").string(), b = (dir / "b.jsonl").string();
  // Paired by id in a's order: q1..q4 give differences 1, 1, 1, 0 (q5 has no score in b: left
  // out; q6 only in a). Mean 0.75. Three non-zero differences, 2^3 sign patterns, and only
  // all-plus and all-minus reach |mean| 0.75: p = 2 / 8 = 0.25.
  write_file_atomically(
      a,
      "{\"id\":\"q1\",\"s\":1}\n{\"id\":\"q2\",\"s\":1}\n{\"id\":\"q3\",\"s\":1}\n"
      "{\"id\":\"q4\",\"s\":0}\n{\"id\":\"q5\",\"s\":1}\n{\"id\":\"q6\",\"s\":1}\n");
  write_file_atomically(
      b,
      "{\"id\":\"q4\",\"t\":0}\n{\"id\":\"q3\",\"t\":0}\n{\"id\":\"q2\",\"t\":0}\n"
      "{\"id\":\"q1\",\"t\":0}\n{\"id\":\"q5\",\"t\":null}\n");
  auto r = testing::run_citeforge("paired " + a + ":s " + b + ":t");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto out = nlohmann::json::parse(
      r.output.substr(r.output.find('{'), r.output.rfind('}') - r.output.find('{') + 1));
  CHECK(out["pairs"] == 4);
  CHECK(out["only_in_a"] == 1);
  CHECK(out["only_in_b"] == 0);
  CHECK(out["difference"].get<double>() == Approx(0.75));
  CHECK(out["p"].get<double>() == Approx(0.25));
  CHECK(out["ci_low"].get<double>() >= 0.0);

  write_file_atomically(b, "{\"id\":\"q1\",\"t\":\"high\"}\n");
  auto bad = testing::run_citeforge("paired " + a + ":s " + b + ":t");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Contains(b) && Contains("line 1") && Contains("field 't'"));
  write_file_atomically(b, "{\"id\":\"q1\",\"t\":1}\n{\"id\":\"q1\",\"t\":1}\n");
  CHECK_THAT(testing::run_citeforge("paired " + a + ":s " + b + ":t").output,
             Contains("line 2") && Contains("appears twice"));
  CHECK_THAT(testing::run_citeforge("paired " + a + " " + b + ":t").output,
             Contains("FILE.jsonl:FIELD"));
}
