// The `tables` stage of a run (docs/design.md §5), from its evaluation archives alone: rebuilds
// results.json from eval/*/*.h5, selects a checkpoint per setting into selection.json, and
// writes tables/, plots/ and report.html (into the run directory, or into
// TablesOptions::out_dir). `citeforge
// tables` and the pipeline's last stage both call it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainer/report/plots.h"
#include "trainer/report/tables.h"

namespace citeforge::trainer {

struct TablesOptions {
  // Selection metric and validation test set; unset: those recorded in the run's
  // selection.json, else its config.resolved.yaml's selection (a run still going), else "f1"
  // on "validation".
  std::optional<std::string> metric;
  std::optional<std::string> validation;
  // Table 3's roles; unset: the validation set is in-distribution, and OOD are the sets the
  // run's config marks `ood` (as in the run's own tables), else every other set.
  std::optional<std::string> in_distribution;
  std::vector<std::string> out_of_distribution;
  // Table 3's metrics; empty: the selection metric, f1 and source_quality.
  std::vector<std::string> correlation_metrics;
  bool plots = true;
  PlotOptions plot;
  // Where results.json, selection.json, tables/ and plots/ are written; unset: the run directory
  // itself. Set, the run directory is only read, so selecting on another set or metric leaves
  // the run's own selection and tables as they were.
  std::optional<std::string> out_dir;
};

struct TabledRun {
  RunSummary summary;
  SelectionOptions selection;
  std::vector<std::string> files;  // results.json, selection.json, tables/* and report.html
  PlotReport plots;
};

TabledRun table_run(const std::string& run_dir, const TablesOptions& options = {});

}  // namespace citeforge::trainer
