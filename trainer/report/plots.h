// Metric-vs-epoch figures (docs/design.md §5), like the evidence-QA paper's Figures 4-7: for each
// test set and metric, one PNG with a line per trained setting (mean and 95% interval per
// epoch) and the base model as a dashed reference. The data and the gnuplot script are written
// to RUN_DIR/plots/ first, so a figure can be restyled by hand; gnuplot then renders them. A
// machine without gnuplot gets the data and scripts and a warning, not an error.
#pragma once

#include <string>
#include <vector>

#include "trainer/eval/results.h"

namespace citeforge::trainer {

struct PlotOptions {
  std::string gnuplot = "gnuplot";   // program name (found on PATH) or path
  std::vector<std::string> metrics;  // empty: every metric of the results
};

struct PlotReport {
  std::vector<std::string> images;    // PNGs rendered
  std::vector<std::string> scripts;   // .gp files written (one per test set)
  std::vector<std::string> warnings;  // gnuplot missing or failing, one line each
};

// PLOTS_DIR/<test set>_<metric>.png: one metric's figure over epochs.
std::string epoch_plot_file(const std::string& plots_dir, const std::string& test_set,
                            const std::string& metric);

// Writes RUN_DIR/plots/<test set>.dat and .gp and renders <test set>_<metric>.png, for every test
// set but the citation baselines' (one point each, the base's).
PlotReport write_plots(const std::string& run_dir, const std::vector<ResultRecord>& results,
                       const PlotOptions& options = {});

// PPO's training curves from RUN_DIR/metrics.jsonl: RUN_DIR/plots/ppo.dat and ppo.gp, rendered
// as ppo_reward.png (reward with its precision and recall parts) and ppo_kl.png (KL to the
// reference, k1 and k3, and the KL coefficient) against iterations, a line per PPO setting.
// When a resumed run logged an iteration twice, the later record counts. A run without PPO
// records writes nothing; a line that is not JSON (a run killed mid-write) is skipped with a
// warning naming it. With `out_dir` the plots go to OUT_DIR/plots/ instead.
PlotReport write_ppo_plots(const std::string& run_dir, const PlotOptions& options = {},
                           const std::string& out_dir = "");

}  // namespace citeforge::trainer
