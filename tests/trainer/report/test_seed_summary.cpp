// The summary across seeds on hand-made runs: spreads and counts worked out in the comments.
#include <catch2/catch.hpp>
#include <cmath>

#include "trainer/report/seed_summary.h"

using namespace citeforge;
using namespace citeforge::trainer;

namespace {

ResultRecord record(const std::string& stage, int epoch, const std::string& test_set, double f1,
                    double ci_low_vs_chance) {
  ResultRecord r;
  r.stage = stage;
  r.epoch = epoch;
  r.test_set = test_set;
  r.checkpoint = stage == "base" ? "base_model" : "checkpoints/" + stage + "-1";
  r.metrics = {{"f1", {f1, 10, f1 - 0.1, f1 + 0.1}}, {"precision", {f1, 10, 0, 1}}};
  r.paired = {{"chance", "f1", {0.1, 10, ci_low_vs_chance, ci_low_vs_chance + 0.2, 0.01}}};
  return r;
}

SeedRun run(std::uint64_t seed, double sft_f1, double ci_low) {
  SeedRun r;
  r.world = "1";
  r.seed = seed;
  r.dir = "runs/x/seed" + std::to_string(seed);
  r.results = {record("base", 0, "validation", 0.1, -0.1),
               record("sft", 1, "validation", sft_f1, ci_low)};
  r.selections = {{"base", 0, "base_model", "f1", "validation", 0.1, {}},
                  {"sft", 1, "checkpoints/sft-1", "f1", "validation", sft_f1, {}}};
  return r;
}

}  // namespace

TEST_CASE("spread across seeds: mean, sample sd and range by hand", "[trainer][seeds]") {
  // 0.2, 0.4, 0.6: mean 0.4, squared deviations 0.04 + 0 + 0.04 over n - 1 = 2: sd 0.2.
  const Spread s = spread_of({0.2, 0.4, 0.6});
  CHECK(s.mean == Approx(0.4));
  CHECK(s.sd == Approx(0.2));
  CHECK(s.min == 0.2);
  CHECK(s.max == 0.6);
  CHECK(spread_of({0.5}).sd == 0);
  CHECK(std::isnan(spread_of({}).mean));
}

TEST_CASE("the seed summary counts the seeds whose paired interval clears 0", "[trainer][seeds]") {
  // SFT's F1 over three seeds: 20, 40, 60 (mean 40.0 ± 20.0 [20.0, 60.0]); its paired interval
  // against chance starts at +0.05, -0.05 and +0.01: two of three seeds clear 0.
  const std::vector<SeedRun> runs = {run(1, 0.2, 0.05), run(2, 0.4, -0.05), run(3, 0.6, 0.01)};
  const std::string md = seed_summary_markdown(runs);
  INFO(md);
  CHECK(md.find("3 runs: training seeds 1, 2, 3; synthetic worlds (data.synth.seed) 1") !=
        std::string::npos);
  CHECK(md.find("## world 1, validation") != std::string::npos);
  const std::size_t sft = md.find("| SFT ");
  REQUIRE(sft != std::string::npos);
  const std::string row = md.substr(sft, md.find('\n', sft) - sft);
  CHECK(row.find("40.0 ± 20.0 [20.0, 60.0]") != std::string::npos);
  CHECK(row.find("2 of 3") != std::string::npos);
  // The base never clears chance here (its interval starts at -0.1 and ends at +0.1).
  const std::size_t base = md.find("| Base ");
  CHECK(md.substr(base, md.find('\n', base) - base).find("0 of 3") != std::string::npos);

  const auto json = seed_summary_json(runs);
  REQUIRE(json.size() == 2);
  CHECK(json[1]["setting"] == "sft");
  CHECK(json[1]["metrics"]["f1"]["sd"].get<double>() == Approx(0.2));
  CHECK(json[1]["seeds_clearing_zero"]["chance"]["f1"]["above"] == 2);
  CHECK(json[1]["seeds_clearing_zero"]["chance"]["f1"]["neither"] == 1);
  CHECK(json[1]["seeds"][2]["seed"] == 3);
}
