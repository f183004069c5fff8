// citeforge run CONFIG.yaml [--out RUN_DIR] [--set key.path=value ...]
#include "common/error.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"
#include "trainer/config/run_config.h"
#include "trainer/dist/dist_run.h"
#include "trainer/recipe/recipe.h"

namespace citeforge::trainer {

int command_run(const Args& raw) {
  auto args = parse_cli("run", raw, {"out", "set"}, {});
  if (args.positional.size() != 1)
    throw Error("usage: citeforge run CONFIG.yaml [--out RUN_DIR] [--set key.path=value ...]");
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
