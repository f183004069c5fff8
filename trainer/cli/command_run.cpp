// citeforge run CONFIG.yaml [--out RUN_DIR] [--set key.path=value ...] [--seeds 1,2,3 [--worlds
// ..]]
#include "common/error.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"
#include "trainer/config/run_config.h"
#include "trainer/distributed/dist_env.h"
#include "trainer/distributed/dist_run.h"
#include "trainer/recipe/recipe.h"
#include "trainer/recipe/seed_sweep.h"

namespace citeforge::trainer {

const CliCommand& run_cli() {
  static const CliCommand command{
      "run",
      "run a config's whole pipeline (train, evaluate, select, tables)",
      "CONFIG.yaml",
      "A run directory that exists is continued (resume: auto) when its config is the same.",
      {{"out", "RUN_DIR", "the run directory (default: runs/<the config's name>)"},
       {"set", "key.path=value", "override a config value", "", true},
       {"seeds", "S,S,...",
        "run once per training seed into RUN_DIR/seed<S> and summarise across seeds "
        "(RUN_DIR/seeds.md)"},
       {"worlds", "W,W,...",
        "with --seeds: also once per synthetic world (data.synth.seed), into "
        "RUN_DIR/world<W>/seed<S>"}}};
  return command;
}

int command_run(const Args& raw) {
  auto args = parse_cli(run_cli(), raw);
  if (args.positional.size() != 1)
    throw Error("run: expected one CONFIG.yaml (citeforge run --help shows the usage)");
  if (args.has("worlds") && !args.has("seeds"))
    throw Error("run: --worlds needs --seeds (the training seeds to run in each world)");
  if (args.has("seeds")) {
    if (read_dist_env().world_size > 1)
      throw Error(
          "run: --seeds runs one process's sweep; start each seed's run under the "
          "launcher instead (--set seed=S --set data.split_seed=...)");
    auto unsigned_list = [&](const std::string& flag) {
      std::vector<std::uint64_t> out;
      for (long v : args.integers(flag)) {
        if (v < 0) throw Error("run: --" + flag + ": seeds are not negative: " + std::to_string(v));
        out.push_back(std::uint64_t(v));
      }
      return out;
    };
    const RunConfig config = load_run_config(args.positional[0], args.all("set"));
    return run_seed_sweep(args.positional[0], args.all("set"),
                          args.get_or("out", "runs/" + config.name),
                          {unsigned_list("seeds"), unsigned_list("worlds")});
  }
  RunConfig config = load_run_config(args.positional[0], args.all("set"));
  // Under `citeforge launch`, torchrun or srun this process is one rank of several.
  auto dist = start_distributed(config);
  try {
    const int code = run_recipe(config, args.get_or("out", "runs/" + config.name), dist.get());
    if (dist) dist->group->finish();
    return code;
  } catch (const std::exception& e) {
    if (dist) dist->group->abort(e.what());  // the others stop now rather than at a timeout
    throw;
  }
}

}  // namespace citeforge::trainer
