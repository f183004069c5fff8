// citeforge tables RUN_DIR... [--metric M] [--validation TEST_SET] [--out DIR] [--no-plots]
// Rebuilds each run's results.json, selection.json, tables/ and plots/ from its evaluation
// archives alone; with several runs it also prints (and with --out writes) the combined
// tables, one Model column per run.
#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"
#include "trainer/report/run_tables.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

int command_tables(const Args& raw) {
  auto args = parse_cli("tables", raw, {"metric", "validation", "out"}, {"no-plots"});
  if (args.positional.empty())
    throw Error(
        "usage: citeforge tables RUN_DIR... [--metric M] [--validation TEST_SET] "
        "[--out DIR] [--no-plots]");
  TablesOptions options;
  if (auto m = args.get("metric")) options.metric = *m;
  if (auto v = args.get("validation")) options.validation = *v;
  options.plots = !args.has("no-plots");
  std::vector<RunSummary> runs;
  for (const auto& dir : args.positional) {
    if (!fs::is_directory(dir)) fail_at(dir, "", "run directory does not exist");
    auto tabled = table_run(dir, options);
    for (const auto& warning : tabled.plots.warnings)
      std::fprintf(stderr, "[tables] plots: %s\n", warning.c_str());
    std::fprintf(stderr, "[tables] %s: %zu files, %zu plots\n", dir.c_str(), tabled.files.size(),
                 tabled.plots.images.size());
    runs.push_back(std::move(tabled.summary));
  }
  const std::string combined = tables_markdown(runs);
  if (auto out = args.get("out")) {
    fs::create_directories(*out);
    write_file_atomically((fs::path(*out) / "tables.md").string(), combined);
    std::fprintf(stderr, "[tables] wrote %s/tables.md\n", out->c_str());
  }
  std::printf("%s", combined.c_str());
  return 0;
}

}  // namespace citeforge::trainer
