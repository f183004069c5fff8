// citeforge run CONFIG.yaml [--out RUN_DIR] [--set key.path=value ...]
#include "common/error.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"
#include "trainer/config/run_config.h"
#include "trainer/distributed/dist_run.h"
#include "trainer/recipe/recipe.h"

namespace citeforge::trainer {

const CliCommand& run_cli() {
  static const CliCommand command{
      "run",
      "run a config's whole pipeline (train, evaluate, select, tables)",
      "CONFIG.yaml",
      "A run directory that exists is continued (resume: auto) when its config is the same.",
      {{"out", "RUN_DIR", "the run directory (default: runs/<the config's name>)"},
       {"set", "key.path=value", "override a config value", "", true}}};
  return command;
}

int command_run(const Args& raw) {
  auto args = parse_cli(run_cli(), raw);
  if (args.positional.size() != 1)
    throw Error("run: expected one CONFIG.yaml (citeforge run --help shows the usage)");
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
