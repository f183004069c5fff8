#include "trainer/report/run_tables.h"

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"
#include "common/join.h"
#include "trainer/report/run_report.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {

namespace fs = std::filesystem;

namespace {

// What the run's resolved config says of selection and of Table 3's roles. A run still going (or
// killed before its end) has no selection.json yet, and no file but the config records which
// sets are out of distribution; reading both makes `tables RUN` give the run's own tables.
struct ConfiguredRun {
  std::optional<std::string> metric, validation;
  std::vector<std::string> out_of_distribution;
  int bootstrap_resamples = rewards::kDefaultBootstrapResamples;  // the paired tests redone
};

ConfiguredRun read_run_config(const RunDir& run) {
  ConfiguredRun out;
  const auto config = read_resolved_config(run);
  if (!config) return out;
  out.metric = config->selection.metric;
  out.validation = config->selection.test_set;
  out.out_of_distribution = table3_roles(*config).out_of_distribution;
  out.bootstrap_resamples = config->eval.bootstrap_resamples;
  return out;
}

// The run's results: read from its evaluation archives, or, for a run directory kept without
// them (the records committed under experiments/), from its own results.json.
std::vector<ResultRecord> run_results(const RunDir& run, int bootstrap_resamples) {
  if (!fs::is_directory(run.eval()) && fs::exists(run.results()))
    return read_results(run.results());
  return results_from_archives(run.root, bootstrap_resamples);
}

}  // namespace

TabledRun table_run(const std::string& run_dir, const TablesOptions& options) {
  TabledRun out;
  const RunDir run{run_dir}, dest{options.out_dir.value_or(run_dir)};
  fs::create_directories(dest.root);
  const ConfiguredRun configured = read_run_config(run);
  std::vector<ResultRecord> results = run_results(run, configured.bootstrap_resamples);
  const std::string results_file = dest.results();
  write_results(results_file, results);
  out.files.push_back(results_file);

  // Re-tabling keeps the run's own choice of metric and validation set unless told otherwise.
  const std::string own_selection = run.selection();
  const std::string selection_file = dest.selection();
  SelectionOptions selection;
  if (fs::exists(own_selection)) {
    if (!options.metric || !options.validation) read_selection(own_selection, &selection);
  } else {
    selection.metric = configured.metric.value_or(selection.metric);
    selection.validation = configured.validation.value_or(selection.validation);
  }
  if (options.metric) selection.metric = *options.metric;
  if (options.validation) selection.validation = *options.validation;
  auto test_sets = test_sets_of(results);
  if (std::find(test_sets.begin(), test_sets.end(), selection.validation) == test_sets.end()) {
    fail_at(run_dir, "validation test set",
            "'" + selection.validation + "' was not evaluated (evaluated: " +
                join(test_sets, ", ") + "); choose one of those to select checkpoints on");
  }
  out.selection = selection;
  out.summary.name = run.name();
  out.summary.results = results;
  out.summary.selections = select_checkpoints(results, selection, results_file);
  write_selection(selection_file, selection, out.summary.selections);
  out.files.push_back(selection_file);

  out.summary.roles =
      default_roles(results, options.in_distribution.value_or(selection.validation));
  std::vector<std::string> ood = options.out_of_distribution;
  if (ood.empty())  // as the run's own tables: its configured OOD sets, less the one selected on
    for (const auto& t : configured.out_of_distribution)
      if (t != out.summary.roles.in_distribution &&
          std::find(test_sets.begin(), test_sets.end(), t) != test_sets.end())
        ood.push_back(t);
  if (!ood.empty()) out.summary.roles.out_of_distribution = ood;
  check_roles(out.summary.roles, results, run_dir);
  out.summary.correlation_metrics = options.correlation_metrics;
  if (out.summary.correlation_metrics.empty())
    for (const auto& m : {selection.metric, std::string("f1"), std::string("source_quality")})
      if (std::find(out.summary.correlation_metrics.begin(), out.summary.correlation_metrics.end(),
                    m) == out.summary.correlation_metrics.end())
        out.summary.correlation_metrics.push_back(m);

  for (auto& file : write_tables(dest.root, out.summary)) out.files.push_back(std::move(file));
  if (options.plots) {
    out.plots = write_plots(dest.root, results, options.plot);
    // Said once: the epoch plots already warned when gnuplot is missing.
    const bool gnuplot_missing =
        std::any_of(out.plots.warnings.begin(), out.plots.warnings.end(),
                    [](const std::string& w) { return w.find("cannot run") != std::string::npos; });
    auto ppo = write_ppo_plots(run_dir, options.plot, dest.root);
    for (auto& image : ppo.images) out.plots.images.push_back(std::move(image));
    for (auto& script : ppo.scripts) out.plots.scripts.push_back(std::move(script));
    for (auto& warning : ppo.warnings)
      if (!gnuplot_missing || warning.find("cannot run") == std::string::npos)
        out.plots.warnings.push_back(std::move(warning));
  }
  // The report shows the figures a reader looks at first: F1, precision, recall and source
  // quality of the given-documents test sets, and PPO's curves.
  std::vector<std::string> figures;
  for (const auto& t : test_sets_of(results, out.summary.roles.in_distribution))
    for (const char* metric : {"f1", "precision", "recall", "source_quality"})
      if (const auto file = epoch_plot_file(dest.plots(), t, metric);
          !uncorrected_test_set(t) &&
          std::count(out.plots.images.begin(), out.plots.images.end(), file))
        figures.push_back(file);
  for (const auto& image : out.plots.images)
    if (fs::path(image).filename().string().rfind("ppo_", 0) == 0) figures.push_back(image);
  const RunDir source{run_dir};
  const std::string report = dest.path("report.html");
  write_file_atomically(
      report,
      run_report_html({out.summary.name, tables_markdown({out.summary}),
                       file_exists(source.config()) ? read_file(source.config()) : "", figures}));
  out.files.push_back(report);
  return out;
}

}  // namespace citeforge::trainer
