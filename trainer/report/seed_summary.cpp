#include "trainer/report/seed_summary.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "common/file_io.h"
#include "trainer/report/tables.h"
#include "trainer/report/text_table.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {

namespace {

using json = nlohmann::ordered_json;

// The metrics summarised across seeds, and the paired tests counted.
const std::vector<std::pair<std::string, std::string>>& summary_metrics() {
  static const std::vector<std::pair<std::string, std::string>> metrics = {
      {"f1", "F1"},
      {"precision", "Precision"},
      {"recall", "Recall"},
      {"source_quality", "Source quality"},
      {"distinct_citations", "Cited distinct"}};
  return metrics;
}

const std::vector<std::pair<std::string, std::string>>& counted_tests() {
  static const std::vector<std::pair<std::string, std::string>> tests = {
      {"chance", "f1"}, {"chance", "precision"}, {"base", "f1"}};
  return tests;
}

// Worlds are numbers: "7" before "10".
bool world_before(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

// One (world, test set, setting) across the seeds that evaluated it.
struct Group {
  std::string world, test_set, setting;
  std::vector<const SeedRun*> runs;
  std::vector<const ResultRecord*> records;  // parallel to runs
};

std::vector<Group> groups_of(const std::vector<SeedRun>& runs) {
  std::vector<const SeedRun*> sorted;
  for (const auto& r : runs) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](const SeedRun* a, const SeedRun* b) {
    return a->world != b->world ? world_before(a->world, b->world) : a->seed < b->seed;
  });
  std::vector<Group> out;
  for (const SeedRun* run : sorted)
    for (const auto& s : run->selections)
      for (const auto& test_set : test_sets_of(run->results, s.test_set)) {
        const ResultRecord* record = find_result(run->results, s.setting, s.epoch, test_set);
        if (!record) continue;
        auto it = std::find_if(out.begin(), out.end(), [&](const Group& g) {
          return g.world == run->world && g.test_set == test_set && g.setting == s.setting;
        });
        if (it == out.end()) {
          out.push_back({run->world, test_set, s.setting, {}, {}});
          it = out.end() - 1;
        }
        it->runs.push_back(run);
        it->records.push_back(record);
      }
  // Worlds in order, then test sets in the order the runs list them (the validation set first),
  // then settings in table order.
  std::vector<std::string> test_sets;
  for (const auto& g : out)
    if (std::find(test_sets.begin(), test_sets.end(), g.test_set) == test_sets.end())
      test_sets.push_back(g.test_set);
  auto rank = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  std::stable_sort(out.begin(), out.end(), [&](const Group& a, const Group& b) {
    if (a.world != b.world) return world_before(a.world, b.world);
    if (a.test_set != b.test_set) return rank(test_sets, a.test_set) < rank(test_sets, b.test_set);
    return rank(stage_names(), a.setting) < rank(stage_names(), b.setting);
  });
  return out;
}

std::vector<double> values_of(const Group& g, const std::string& metric) {
  std::vector<double> out;
  for (const ResultRecord* r : g.records)
    if (const auto* a = find_metric(*r, metric); a && !std::isnan(a->mean)) out.push_back(a->mean);
  return out;
}

// How many seeds' paired intervals lie above 0, below 0, or include it.
struct Verdicts {
  int above = 0, below = 0, neither = 0;
};

Verdicts verdicts_of(const Group& g, const std::string& against, const std::string& metric) {
  Verdicts v;
  for (const ResultRecord* r : g.records) {
    const PairedComparison* c = find_comparison(r->paired, against, metric);
    if (!c || std::isnan(c->test.ci_low)) continue;
    if (c->test.ci_low > 0)
      ++v.above;
    else if (c->test.ci_high < 0)
      ++v.below;
    else
      ++v.neither;
  }
  return v;
}

std::string spread_cell(const Spread& s, double scale, int decimals) {
  if (s.count == 0) return "–";
  return fixed(scale * s.mean, decimals) + " ± " + fixed(scale * s.sd, decimals) + " [" +
         fixed(scale * s.min, decimals) + ", " + fixed(scale * s.max, decimals) + "]";
}

std::string verdict_cell(const Verdicts& v) {
  const int n = v.above + v.below + v.neither;
  if (n == 0) return "–";
  std::string out = std::to_string(v.above) + " of " + std::to_string(n);
  if (v.below > 0) out += " (" + std::to_string(v.below) + " below)";
  return out;
}

std::string world_title(const std::string& world) {
  return world.empty() ? "" : "world " + world;
}

}  // namespace

SeedRun read_seed_run(const std::string& run_dir, const std::string& world, std::uint64_t seed) {
  const RunDir dir{run_dir};
  SeedRun run;
  run.world = world;
  run.seed = seed;
  run.dir = run_dir;
  run.results = read_results(dir.results());
  run.selections = read_selection(dir.selection());
  return run;
}

Spread spread_of(const std::vector<double>& values) {
  Spread s;
  s.count = values.size();
  if (values.empty()) {
    s.mean = s.sd = s.min = s.max = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / double(values.size());
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.sd = values.size() > 1 ? std::sqrt(squares / double(values.size() - 1)) : 0;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

std::string seed_summary_markdown(const std::vector<SeedRun>& runs) {
  std::set<std::uint64_t> seeds;
  std::set<std::string> worlds;
  for (const auto& r : runs) {
    seeds.insert(r.seed);
    worlds.insert(r.world);
  }
  std::string out = "# Across seeds\n\n";
  out += std::to_string(runs.size()) + " runs: training seeds ";
  std::string list;
  for (auto s : seeds) list += (list.empty() ? "" : ", ") + std::to_string(s);
  out += list;
  if (!(worlds.size() == 1 && worlds.begin()->empty())) {
    std::string w;
    for (const auto& x : worlds) w += (w.empty() ? "" : ", ") + x;
    out += "; synthetic worlds (data.synth.seed) " + w;
  }
  out +=
      ".\n\nEach row is one setting's selected checkpoint per seed. Metrics in percent (cited "
      "distinct: documents per answer) as mean ± standard deviation across seeds [min, max]. "
      "The last columns count the seeds whose paired 95% interval on the same questions lies "
      "above 0 (each run's own tables give the intervals and Holm-adjusted p-values). Worlds "
      "are never pooled: each has its own questions.\n";
  std::string current;
  TextTable table;
  auto flush = [&] {
    if (table.rows.empty()) return;
    out += to_markdown(table);
    table.rows.clear();
  };
  for (const auto& g : groups_of(runs)) {
    const std::string heading = "\n## " +
                                (g.world.empty() ? std::string() : world_title(g.world) + ", ") +
                                g.test_set + "\n\n";
    if (heading != current) {
      flush();
      out += heading;
      current = heading;
      table.header = {"Setting", "Seeds"};
      table.numeric = {false, true};
      for (const auto& [metric, title] : summary_metrics()) {
        table.header.push_back(title);
        table.numeric.push_back(true);
      }
      for (const auto& [against, metric] : counted_tests()) {
        table.header.push_back((metric == "f1" ? std::string("F1") : std::string("P")) + " > " +
                               against);
        table.numeric.push_back(true);
      }
    }
    std::vector<std::string> row = {stage_title(g.setting), std::to_string(g.records.size())};
    for (const auto& [metric, title] : summary_metrics())
      row.push_back(metric == "distinct_citations"
                        ? spread_cell(spread_of(values_of(g, metric)), 1, 2)
                        : spread_cell(spread_of(values_of(g, metric)), 100, 1));
    for (const auto& [against, metric] : counted_tests())
      row.push_back(g.setting == "base" && against == "base"
                        ? "–"
                        : verdict_cell(verdicts_of(g, against, metric)));
    table.rows.push_back(row);
  }
  flush();
  out += "\n## Runs\n\n";
  for (const auto& r : runs)
    out += "- " + (r.world.empty() ? std::string() : world_title(r.world) + ", ") + "seed " +
           std::to_string(r.seed) + ": `" + r.dir + "`\n";
  return out;
}

json seed_summary_json(const std::vector<SeedRun>& runs) {
  json out = json::array();
  for (const auto& g : groups_of(runs)) {
    json item = {{"world", g.world}, {"test_set", g.test_set}, {"setting", g.setting}};
    json seeds = json::array();
    for (std::size_t i = 0; i < g.runs.size(); ++i) {
      json seed = {{"seed", g.runs[i]->seed}, {"dir", g.runs[i]->dir}};
      for (const auto& s : g.runs[i]->selections)
        if (s.setting == g.setting) seed["epoch"] = s.epoch;
      seed["paired"] = paired_to_json(g.records[i]->paired);
      seeds.push_back(seed);
    }
    json metrics = json::object();
    for (const auto& [metric, title] : summary_metrics()) {
      const Spread s = spread_of(values_of(g, metric));
      metrics[metric] = {{"mean", json_number(s.mean)},
                         {"sd", json_number(s.sd)},
                         {"min", json_number(s.min)},
                         {"max", json_number(s.max)},
                         {"count", s.count},
                         {"values", values_of(g, metric)}};
    }
    json counts = json::object();
    for (const auto& [against, metric] : counted_tests()) {
      const Verdicts v = verdicts_of(g, against, metric);
      counts[against][metric] = {{"above", v.above}, {"below", v.below}, {"neither", v.neither}};
    }
    item["metrics"] = metrics;
    item["seeds_clearing_zero"] = counts;
    item["seeds"] = seeds;
    out.push_back(item);
  }
  return out;
}

std::vector<std::string> write_seed_summary(const std::string& dir,
                                            const std::vector<SeedRun>& runs) {
  std::filesystem::create_directories(dir);
  const std::string md = (std::filesystem::path(dir) / "seeds.md").string();
  const std::string js = (std::filesystem::path(dir) / "seeds.json").string();
  write_file_atomically(md, seed_summary_markdown(runs));
  write_file_atomically(js, seed_summary_json(runs).dump(2) + "\n");
  return {md, js};
}

}  // namespace citeforge::trainer
