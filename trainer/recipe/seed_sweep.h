// `citeforge run CONFIG --seeds 1,2,3 [--worlds 1,7,8]`: the config run once per training seed
// (LoRA init, data order, dropout, sampling: the run's `seed`), and per synthetic world
// (data.synth.seed) when given, each into its own run directory, then summarised across seeds
// (trainer/report/seed_summary.h). The splits and samples are drawn with one pinned
// data.split_seed, so every seed of a world answers the same questions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/report/seed_summary.h"

namespace citeforge::trainer {

struct SeedSweep {
  std::vector<std::uint64_t> seeds;
  std::vector<std::uint64_t> worlds;  // empty: the config's own data
};

// OUT/seed<k> (or OUT/world<w>/seed<k> with worlds) per run, each resumable as any run
// directory, then OUT/seeds.md and OUT/seeds.json. Returns 0 when every run finished.
int run_seed_sweep(const std::string& config_path, const std::vector<std::string>& sets,
                   const std::string& out, const SeedSweep& sweep);

// The finished runs (config.resolved.yaml, results.json and selection.json present) in OUT/seed*
// and OUT/world*/seed*, each labelled by its own resolved config's seed and world.
std::vector<SeedRun> collect_seed_runs(const std::string& out);

// The run directory of one (world, seed) of a sweep into `out`.
std::string sweep_run_dir(const std::string& out, const SeedSweep& sweep, std::uint64_t world,
                          std::uint64_t seed);

}  // namespace citeforge::trainer
