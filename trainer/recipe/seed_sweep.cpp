#include "trainer/recipe/seed_sweep.h"

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "trainer/config/run_config.h"
#include "trainer/recipe/recipe.h"
#include "trainer/report/seed_summary.h"
#include "trainer/run/progress.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {

namespace {

void check_list(const std::vector<std::uint64_t>& values, const std::string& flag) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (std::count(values.begin(), values.end(), values[i]) > 1)
      throw Error("run: " + flag + " lists " + std::to_string(values[i]) + " twice");
}

}  // namespace

std::vector<SeedRun> collect_seed_runs(const std::string& out) {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  auto starts = [](const fs::path& p, const std::string& prefix) {
    return p.filename().string().rfind(prefix, 0) == 0;
  };
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!entry.is_directory()) continue;
    if (starts(entry.path(), "seed")) dirs.push_back(entry.path());
    if (starts(entry.path(), "world"))
      for (const auto& inner : fs::directory_iterator(entry.path()))
        if (inner.is_directory() && starts(inner.path(), "seed")) dirs.push_back(inner.path());
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<SeedRun> runs;
  for (const auto& dir : dirs) {
    const RunDir run{dir.string()};
    const auto config = read_resolved_config(run);
    if (!config || !fs::exists(run.selection()) || !fs::exists(run.results())) continue;
    runs.push_back(read_seed_run(
        dir.string(), config->data.synth_enabled ? std::to_string(config->data.synth.seed) : "",
        config->seed));
  }
  return runs;
}

std::string sweep_run_dir(const std::string& out, const SeedSweep& sweep, std::uint64_t world,
                          std::uint64_t seed) {
  std::filesystem::path dir(out);
  if (!sweep.worlds.empty()) dir /= "world" + std::to_string(world);
  return (dir / ("seed" + std::to_string(seed))).string();
}

int run_seed_sweep(const std::string& config_path, const std::vector<std::string>& sets,
                   const std::string& out, const SeedSweep& sweep) {
  if (sweep.seeds.empty()) throw Error("run: --seeds needs at least one seed");
  check_list(sweep.seeds, "--seeds");
  check_list(sweep.worlds, "--worlds");
  const RunConfig base = load_run_config(config_path, sets);
  if (!sweep.worlds.empty() && !base.data.synth_enabled)
    throw Error("run: --worlds sets data.synth.seed, but " + config_path +
                " has no synthetic world (data.synth)");
  // Every seed draws the same splits and samples: those the config itself would draw.
  const std::string pinned_split = "data.split_seed=" + std::to_string(split_seed(base));
  const std::vector<std::uint64_t> worlds =
      sweep.worlds.empty() ? std::vector<std::uint64_t>{base.data.synth.seed} : sweep.worlds;
  std::size_t done = 0;
  const std::size_t total = worlds.size() * sweep.seeds.size();
  for (const auto world : worlds)
    for (const auto seed : sweep.seeds) {
      std::vector<std::string> with = sets;
      with.push_back("seed=" + std::to_string(seed));
      with.push_back(pinned_split);
      if (!sweep.worlds.empty()) with.push_back("data.synth.seed=" + std::to_string(world));
      const RunConfig config = load_run_config(config_path, with);
      const std::string dir = sweep_run_dir(out, sweep, world, seed);
      say("seed sweep: run " + std::to_string(++done) + " of " + std::to_string(total) +
          (base.data.synth_enabled ? ", world " + std::to_string(world) : std::string()) +
          ", seed " + std::to_string(seed) + " into " + dir);
      const int code = run_recipe(config, dir);
      if (code != 0) return code;
    }
  // Every finished run under OUT, so that sweeps run one after another into the same directory
  // (three seeds in one world, then one seed in two more worlds) are summarised together.
  const auto runs = collect_seed_runs(out);
  for (const auto& path : write_seed_summary(out, runs)) say("wrote " + path);
  return 0;
}

}  // namespace citeforge::trainer
