#include "trainer/report/plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "common/file_io.h"
#include "trainer/run/run_dir.h"

extern char** environ;

namespace citeforge::trainer {

namespace {

namespace fs = std::filesystem;

// The images gnuplot was asked for: those it wrote, and a warning for each it did not.
void collect_images(const std::vector<std::string>& images, PlotReport& report) {
  for (const auto& image : images) {
    if (fs::exists(image))
      report.images.push_back(image);
    else
      report.warnings.push_back("plots: gnuplot did not write " + image);
  }
}

// A gnuplot single-quoted string: only the quote itself needs escaping, by doubling it.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.10g", value);
  return buffer;
}

struct Series {
  std::string setting;
  std::vector<const ResultRecord*> points;  // by epoch
};

// One block per setting, separated by two blank lines so gnuplot addresses them by `index`.
// Columns: epoch, then mean, ci_low, ci_high of each metric. The base model's single point is
// written at epoch 0 and again at the last epoch, which draws it as a horizontal reference line.
std::string data_file(const std::vector<Series>& series, const std::vector<std::string>& metrics,
                      int last_epoch) {
  std::string out = "# epoch";
  for (const auto& m : metrics) out += " " + m + "_mean " + m + "_ci_low " + m + "_ci_high";
  out += "\n";
  for (std::size_t s = 0; s < series.size(); ++s) {
    if (s > 0) out += "\n\n";
    out += "# setting " + series[s].setting + "\n";
    auto row = [&](int epoch, const ResultRecord& r) {
      out += std::to_string(epoch);
      for (const auto& m : metrics) {
        const rewards::Aggregate* a = find_metric(r, m);
        double nan = std::nan("");
        // Appended piece by piece: GCC 12 warns falsely (-Wstringop-overflow) on the
        // concatenation of temporaries here.
        for (double value : {a ? a->mean : nan, a ? a->ci_low : nan, a ? a->ci_high : nan}) {
          out += ' ';
          out += number(value);
        }
      }
      out += "\n";
    };
    for (const ResultRecord* r : series[s].points) row(r->epoch, *r);
    if (series[s].setting == "base" && last_epoch > 0) row(last_epoch, *series[s].points.front());
  }
  return out;
}

std::string script_file(const std::string& test_set, const std::string& data_path,
                        const std::vector<Series>& series, const std::vector<std::string>& metrics,
                        const std::vector<std::string>& images, int last_epoch) {
  std::string out = "# Metric vs. epoch on test set " + test_set + "; data in " + data_path +
                    ".\nset terminal pngcairo size 800,500 noenhanced\n"
                    "set key outside right top\nset grid\nset xlabel 'epoch'\n"
                    "set xrange [-0.2:" +
                    number(std::max(1, last_epoch) + 0.2) + "]\n";
  if (last_epoch <= 20) out += "set xtics 1\n";
  for (std::size_t m = 0; m < metrics.size(); ++m) {
    int mean = 2 + 3 * static_cast<int>(m);
    out += "\nset output " + quoted(images[m]) + "\n";
    out += "set title " + quoted(test_set + ": " + metrics[m]) + "\n";
    out += "set ylabel " + quoted(metrics[m]) + "\n";
    out += "plot ";
    for (std::size_t s = 0; s < series.size(); ++s) {
      std::string source = quoted(data_path) + " index " + std::to_string(s);
      std::string title = quoted(stage_title(series[s].setting));
      if (s > 0) out += ", \\\n     ";
      if (series[s].setting == "base")
        out += source + " using 1:" + std::to_string(mean) +
               " with lines dashtype 2 linewidth 2 linecolor 'black' title " + title;
      else
        out += source + " using 1:" + std::to_string(mean) + ":" + std::to_string(mean + 1) + ":" +
               std::to_string(mean + 2) + " with yerrorlines linewidth 2 title " + title;
    }
    out += "\n";
  }
  out += "unset output\n";
  return out;
}

// Runs `program script` with output to `log`; returns "" on success or a one-line reason.
std::string run_gnuplot(const std::string& program, const std::string& script,
                        const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> argv = {const_cast<char*>(program.c_str()), const_cast<char*>(script.c_str()),
                             nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return "cannot run '" + program + "' (" + std::strerror(rc) +
           "); install gnuplot (Debian: gnuplot-nox) to render the plots";
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return "waiting for '" + program + "' failed";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  std::string first_line;
  try {
    std::string text = read_file(log);
    first_line = text.substr(0, text.find('\n'));
    while (!first_line.empty() && first_line.back() == '\r') first_line.pop_back();
  } catch (const Error&) {
  }
  return "'" + program + " " + script + "' failed" +
         (WIFEXITED(status) ? " with exit code " + std::to_string(WEXITSTATUS(status))
                            : std::string(" (killed)")) +
         (first_line.empty() ? "" : ": " + first_line) + " (see " + log + ")";
}

}  // namespace

std::string epoch_plot_file(const std::string& plots_dir, const std::string& test_set,
                            const std::string& metric) {
  return (fs::path(plots_dir) / (test_set + "_" + metric + ".png")).string();
}

PlotReport write_plots(const std::string& run_dir, const std::vector<ResultRecord>& results,
                       const PlotOptions& options) {
  PlotReport report;
  fs::path dir = RunDir{run_dir}.plots();
  fs::create_directories(dir);
  std::vector<std::string> test_sets;
  // A citation baseline's set holds the base's answers re-cited, one point with nothing to plot
  // against epochs: it is a row of its test set's Table 2 instead.
  for (const auto& r : results)
    if (!is_baseline_test_set(r.test_set) &&
        std::find(test_sets.begin(), test_sets.end(), r.test_set) == test_sets.end())
      test_sets.push_back(r.test_set);
  std::sort(test_sets.begin(), test_sets.end());

  bool gnuplot_missing = false;
  for (const auto& test_set : test_sets) {
    if (!is_plain_name(test_set))
      fail_at(run_dir, "test set '" + test_set + "'", "is not a plain name, cannot name a plot");
    std::vector<Series> series;
    std::vector<std::string> metrics = options.metrics;
    int last_epoch = 0;
    for (const auto& setting : stage_names()) {
      Series s{setting, {}};
      for (const auto& r : results)
        if (r.stage == setting && r.test_set == test_set) s.points.push_back(&r);
      std::sort(s.points.begin(), s.points.end(),
                [](const ResultRecord* a, const ResultRecord* b) { return a->epoch < b->epoch; });
      if (s.points.empty()) continue;
      for (const ResultRecord* r : s.points) {
        last_epoch = std::max(last_epoch, r->epoch);
        if (options.metrics.empty())
          for (const auto& [name, a] : r->metrics)
            if (std::find(metrics.begin(), metrics.end(), name) == metrics.end())
              metrics.push_back(name);
      }
      series.push_back(std::move(s));
    }
    std::vector<std::string> images;
    for (const auto& m : metrics) {
      if (!is_plain_name(m)) fail_at(run_dir, "metric '" + m + "'", "cannot name a plot");
      images.push_back(epoch_plot_file(dir.string(), test_set, m));
    }
    std::string data_path = (dir / (test_set + ".dat")).string();
    std::string script_path = (dir / (test_set + ".gp")).string();
    write_file_atomically(data_path, data_file(series, metrics, last_epoch));
    write_file_atomically(script_path,
                          script_file(test_set, data_path, series, metrics, images, last_epoch));
    report.scripts.push_back(script_path);
    if (gnuplot_missing) continue;  // said once already
    // Figures of earlier data must not pass for new ones if gnuplot fails now.
    for (const auto& image : images) fs::remove(image);
    std::string log = (dir / (test_set + ".log")).string();
    std::string problem = run_gnuplot(options.gnuplot, script_path, log);
    if (!problem.empty()) {
      report.warnings.push_back("plots: " + problem);
      gnuplot_missing = problem.rfind("cannot run", 0) == 0;
      continue;
    }
    fs::remove(log);
    collect_images(images, report);
  }
  return report;
}

namespace {

// The columns of ppo.dat after the iteration, in order, and which figure draws each.
struct PpoColumn {
  const char* key;
  const char* figure;  // "reward" or "kl"
  const char* title;
};
constexpr PpoColumn kPpoColumns[] = {
    {"reward_mean", "reward", "reward"}, {"precision_mean", "reward", "precision"},
    {"recall_mean", "reward", "recall"}, {"kl_k1", "kl", "KL (k1)"},
    {"kl_k3", "kl", "KL (k3)"},          {"beta", "kl", "beta (right axis)"},
};

}  // namespace

PlotReport write_ppo_plots(const std::string& run_dir, const PlotOptions& options,
                           const std::string& out_dir) {
  PlotReport report;
  const fs::path metrics = RunDir{run_dir}.metrics();
  if (!fs::exists(metrics)) return report;
  // stage -> iteration -> record (the last one logged wins: a resumed run repeats iterations).
  std::map<std::string, std::map<int64_t, nlohmann::json>> stages;
  std::istringstream lines(read_file(metrics.string()));
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded()) {
      report.warnings.push_back("plots: " + metrics.string() + " line " + std::to_string(number) +
                                " is not JSON; skipped");
      continue;
    }
    if (!record.is_object() || !record.contains("reward_mean") || !record.contains("iteration") ||
        !record.contains("stage"))
      continue;
    stages[record["stage"].get<std::string>()][record["iteration"].get<int64_t>()] = record;
  }
  if (stages.empty()) return report;

  const fs::path dir = RunDir{out_dir.empty() ? run_dir : out_dir}.plots();
  fs::create_directories(dir);
  const std::string data_path = (dir / "ppo.dat").string();
  const std::string script_path = (dir / "ppo.gp").string();
  std::string data = "# iteration";
  for (const auto& c : kPpoColumns) data += std::string(" ") + c.key;
  data += "\n";
  std::vector<std::string> names;
  for (const auto& [stage, records] : stages) {
    if (!names.empty()) data += "\n\n";
    names.push_back(stage);
    data += "# setting " + stage + "\n";
    for (const auto& [it, r] : records) {
      data += std::to_string(it);
      for (const auto& c : kPpoColumns) {
        data += ' ';
        data += number(r.contains(c.key) && r[c.key].is_number() ? r[c.key].get<double>()
                                                                 : std::nan(""));
      }
      data += "\n";
    }
  }
  const std::vector<std::string> images = {(dir / "ppo_reward.png").string(),
                                           (dir / "ppo_kl.png").string()};
  std::string script = "# PPO training curves; data in " + data_path +
                       ".\nset terminal pngcairo size 800,500 noenhanced\n"
                       "set key outside right top\nset grid\nset xlabel 'iteration'\n";
  const char* figures[] = {"reward", "kl"};
  for (int f = 0; f < 2; ++f) {
    const std::string figure = figures[f];
    script += "\nset output " + quoted(images[f]) + "\n";
    script += "set title " +
              quoted(figure == "reward" ? "PPO reward and its parts"
                                        : "KL to the reference and its coefficient") +
              "\n";
    script +=
        "set ylabel " + quoted(figure == "reward" ? "mean per answer" : "nats per answer") + "\n";
    if (figure == "kl") script += "set y2label 'beta'\nset y2tics\n";
    script += "plot ";
    bool first = true;
    for (std::size_t s = 0; s < names.size(); ++s)
      for (std::size_t c = 0; c < std::size(kPpoColumns); ++c) {
        if (kPpoColumns[c].figure != figure) continue;
        if (!first) script += ", \\\n     ";
        first = false;
        const bool beta = std::string(kPpoColumns[c].key) == "beta";
        script += quoted(data_path) + " index " + std::to_string(s) +
                  " using 1:" + std::to_string(c + 2) + " with linespoints" +
                  (beta ? " axes x1y2" : "") + " title " +
                  quoted(stage_title(names[s]) + ": " + kPpoColumns[c].title);
      }
    script += "\n";
    if (figure == "kl") script += "unset y2label\nunset y2tics\n";
  }
  script += "unset output\n";
  write_file_atomically(data_path, data);
  write_file_atomically(script_path, script);
  report.scripts.push_back(script_path);
  for (const auto& image : images) fs::remove(image);
  const std::string log = (dir / "ppo.log").string();
  std::string problem = run_gnuplot(options.gnuplot, script_path, log);
  if (!problem.empty()) {
    report.warnings.push_back("plots: " + problem);
    return report;
  }
  fs::remove(log);
  collect_images(images, report);
  return report;
}

}  // namespace citeforge::trainer
