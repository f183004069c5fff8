// A config run once per training seed, and per synthetic world (data.synth.seed), summarised
// across the seeds of each world (docs/design.md §5): how much of a result is the seed. For each
// world, test set and setting (each seed's selected checkpoint), the metrics' mean, standard
// deviation and range across seeds, and each seed's paired tests against chance and the base
// with how many seeds clear 0. Worlds are never pooled: each has its own questions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/eval/results.h"
#include "trainer/eval/selection.h"

namespace citeforge::trainer {

struct SeedRun {
  std::string world;  // "1" for data.synth.seed 1, "" when the data is not synthetic
  std::uint64_t seed = 0;
  std::string dir;  // the run directory, as the summary names it
  std::vector<ResultRecord> results;
  std::vector<Selection> selections;
};

// Reads a finished run's results.json and selection.json; errors name the file.
SeedRun read_seed_run(const std::string& run_dir, const std::string& world, std::uint64_t seed);

// Mean, sample standard deviation (n - 1; 0 for one value), min and max of `values`.
struct Spread {
  double mean = 0, sd = 0, min = 0, max = 0;
  std::size_t count = 0;
};
Spread spread_of(const std::vector<double>& values);

// seeds.md and seeds.json of `runs` (any order; grouped by world, then test set, then setting).
std::string seed_summary_markdown(const std::vector<SeedRun>& runs);
nlohmann::ordered_json seed_summary_json(const std::vector<SeedRun>& runs);
// Writes DIR/seeds.md and DIR/seeds.json; returns their paths.
std::vector<std::string> write_seed_summary(const std::string& dir,
                                            const std::vector<SeedRun>& runs);

}  // namespace citeforge::trainer
