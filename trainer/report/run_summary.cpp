#include "trainer/report/run_summary.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "trainer/report/run_tables.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {
namespace {

// One line per selected checkpoint: where it is, its validation score and its scores on the
// other test sets (not the citation baselines', which are the base's answers re-cited by a rule);
// selection.json holds the intervals and every metric.
void print_selection(const RunSetup& setup) {
  auto fixed3 = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return std::string(buf);
  };
  const std::string path = setup.dir.selection();
  if (!file_exists(path)) return;
  const auto selection = nlohmann::json::parse(read_file(path));
  std::printf("Selected checkpoints (by %s on '%s'; details in %s):\n",
              selection.value("metric", "").c_str(), selection.value("validation", "").c_str(),
              path.c_str());
  for (const auto& s : selection.at("selected")) {
    const std::string metric = s.value("metric", ""), validation = s.value("test_set", "");
    std::string line = "  " + s.value("setting", "") + " epoch " +
                       std::to_string(s.value("epoch", 0)) + " (" + s.value("checkpoint", "") +
                       "): " + validation + " " + metric + " " + fixed3(s.value("value", 0.0));
    const auto scores = s.value("scores", nlohmann::json::object());
    for (const auto& [test_set, metrics] : scores.items())
      if (test_set != validation && !is_baseline_test_set(test_set) && metrics.contains(metric))
        line += ", " + test_set + " " + fixed3(metrics[metric].value("mean", 0.0));
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

void print_run_tables(const RunSetup& setup, const RunData& run_data) {
  // Table 3's roles come from the run's config (table3_roles), as for `citeforge tables RUN`.
  TablesOptions options;
  options.metric = setup.config.selection.metric;
  options.validation = setup.config.selection.test_set;
  auto tabled = table_run(setup.dir.root, options);
  for (const auto& warning : tabled.plots.warnings) say("plots: " + warning);
  for (const auto& t : run_data.test_sets) {
    std::vector<std::string> names = {t.spec.name};  // then its corrected answers
    for (const auto& method : setup.config.eval.corrections)
      names.push_back(corrected_test_set(t.spec.name, method));
    for (const auto& name : names) {
      const std::string file =
          (std::filesystem::path(setup.dir.tables()) / table2_file(name)).string();
      if (!file_exists(file)) continue;
      const char* scenario = t.scenario == retrieval::Scenario::rtg   ? ", retrieve-then-generate"
                             : t.scenario == retrieval::Scenario::gtr ? ", generate-then-retrieve"
                                                                      : "";
      std::printf("Table 2, %s (%s%s):\n%s\n", name.c_str(),
                  t.spec.ood ? "out-of-distribution" : "in-distribution", scenario,
                  read_file(file).c_str());
    }
  }
  print_selection(setup);
}

}  // namespace citeforge::trainer
