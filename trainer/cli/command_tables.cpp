// citeforge tables RUN_DIR... [--metric M] [--validation TEST_SET] [--out DIR] [--no-plots]
// Rebuilds each run's results.json, selection.json, tables/ and plots/ from its evaluation
// archives alone, and prints the combined tables, one Model column per run. With --out the runs
// are only read: each run's files go to DIR/<run name>/ and the combined tables to
// DIR/tables.md, so a selection on another set (the paper's in-distribution test set, say)
// never replaces the one a run made on its validation set.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"
#include "trainer/report/run_tables.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

const CliCommand& tables_cli() {
  static const CliCommand command{
      "tables",
      "rebuild the papers' tables and plots of run directories",
      "RUN_DIR...",
      "Without --out each run's tables are rewritten in place; with --out the runs are only read\n"
      "and everything goes to DIR/<run name>/ and DIR/tables.md.",
      {{"metric", "M", "the selection metric (default: the run's, from selection.json or config)"},
       {"validation", "TEST_SET", "the test set to select on (default: the run's)"},
       {"out", "DIR", "write here instead of into the runs"},
       {"no-plots", "", "skip the gnuplot figures"}}};
  return command;
}

int command_tables(const Args& raw) {
  auto args = parse_cli(tables_cli(), raw);
  if (args.positional.empty())
    throw Error("tables: give at least one RUN_DIR (citeforge tables --help shows the usage)");
  TablesOptions options;
  if (auto m = args.get("metric")) options.metric = *m;
  if (auto v = args.get("validation")) options.validation = *v;
  options.plots = !args.has("no-plots");
  const auto out = args.get("out");
  std::vector<RunSummary> runs;
  std::vector<std::string> names;
  for (const auto& dir : args.positional) {
    if (!fs::is_directory(dir)) fail_at(dir, "", "run directory does not exist");
    if (out) {
      const std::string name = RunDir{dir}.name();
      if (std::find(names.begin(), names.end(), name) != names.end())
        fail_at(dir, "",
                "another run directory given is also named '" + name +
                    "'; with --out each run's tables go to DIR/<run name>/");
      names.push_back(name);
      options.out_dir = (fs::path(*out) / name).string();
    }
    auto tabled = table_run(dir, options);
    for (const auto& warning : tabled.plots.warnings)
      std::fprintf(stderr, "[tables] plots: %s\n", warning.c_str());
    std::fprintf(stderr, "[tables] %s: %zu files, %zu plots%s\n", dir.c_str(), tabled.files.size(),
                 tabled.plots.images.size(),
                 out ? (" in " + *options.out_dir + " (the run is left as it was)").c_str() : "");
    runs.push_back(std::move(tabled.summary));
  }
  const std::string combined = tables_markdown(runs);
  if (out) {
    fs::create_directories(*out);
    write_file_atomically((fs::path(*out) / "tables.md").string(), combined);
    std::fprintf(stderr, "[tables] wrote %s/tables.md\n", out->c_str());
  }
  std::printf("%s", combined.c_str());
  return 0;
}

}  // namespace citeforge::trainer
