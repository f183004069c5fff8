#include "trainer/report/tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "attribution/citation_baselines.h"
#include "common/error.h"
#include "common/file_io.h"
#include "common/join.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {

namespace {

namespace fs = std::filesystem;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string count_cell(const ResultRecord* record) {
  if (!record || record->metrics.empty()) return "–";
  return std::to_string(record->metrics.front().second.count);
}

bool evaluated_on(const RunSummary& run, const std::string& test_set) {
  for (const auto& r : run.results)
    if (r.test_set == test_set) return true;
  return false;
}

// Test sets of all runs: the first run's ID set first, then the first run's others, then any
// only later runs have.
std::vector<std::string> all_test_sets(const std::vector<RunSummary>& runs) {
  std::vector<std::string> out;
  for (const auto& run : runs)
    for (const auto& t : test_sets_of(run.results, run.roles.in_distribution))
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  return out;
}

std::vector<std::string> with_model(const std::vector<RunSummary>& runs, const RunSummary& run,
                                    std::vector<std::string> cells) {
  if (runs.size() > 1) cells.insert(cells.begin(), run.name);
  return cells;
}

std::vector<std::string> header_with_model(const std::vector<RunSummary>& runs,
                                           std::vector<std::string> header) {
  if (runs.size() > 1) header.insert(header.begin(), "Model");
  return header;
}

std::vector<bool> numeric_columns(const std::vector<RunSummary>& runs, std::vector<bool> columns) {
  if (runs.size() > 1) columns.insert(columns.begin(), false);
  return columns;
}

// "0.98**": r with the paper's significance marks.
std::string correlation_cell(const PearsonResult& c) {
  if (std::isnan(c.r)) return "n/a (n = " + std::to_string(c.n) + ")";
  std::string stars = c.p < 0.001 ? "**" : c.p < 0.01 ? "*" : "";
  char p[32];
  std::snprintf(p, sizeof p, "%.2g", c.p);
  return fixed(c.r, 2) + stars + " (p = " + p + ", n = " + std::to_string(c.n) + ")";
}

std::string selection_note(const RunSummary& run) {
  if (run.selections.empty()) return "";
  std::string out = (run.name.empty() ? "" : run.name + ": ") + "checkpoints selected by " +
                    run.selections.front().metric + " on '" + run.selections.front().test_set + "'";
  std::string chosen;
  for (const auto& s : run.selections)
    if (s.setting != "base")
      chosen += (chosen.empty() ? "" : ", ") + stage_title(s.setting) + " epoch " +
                std::to_string(s.epoch);
  return out + (chosen.empty() ? "" : " (" + chosen + ")") + ".";
}

// Table 2's paired columns: F1, precision and recall against chance and against the base model.
struct PairedColumn {
  std::string metric, against, title;
};

const std::vector<PairedColumn>& table2_paired_columns() {
  static const std::vector<PairedColumn> columns = {
      {"f1", "chance", "F1 − chance"},    {"precision", "chance", "P − chance"},
      {"recall", "chance", "R − chance"}, {"f1", "base", "F1 − base"},
      {"precision", "base", "P − base"},  {"recall", "base", "R − base"}};
  return columns;
}

// One row of Table 2: a run's selected checkpoint and its result on the table's test set, or,
// right after the base row, the base model's answers re-cited by a citation baseline
// (eval.baselines), whose difference from the base is the one from the answers it re-cited.
struct Table2Row {
  const RunSummary* run;
  const Selection* selection;
  const ResultRecord* result;  // nullptr when that checkpoint was not evaluated on the set
  std::string title;           // "SFT", "Base + cite_bm25"
  std::string base_comparison = "base";
};

std::vector<Table2Row> table2_rows(const std::vector<RunSummary>& runs,
                                   const std::string& test_set) {
  std::vector<Table2Row> rows;
  for (const auto& run : runs) {
    if (!evaluated_on(run, test_set)) continue;
    for (const auto& s : run.selections) {
      rows.push_back({&run, &s, find_result(run.results, s.setting, s.epoch, test_set),
                      stage_title(s.setting)});
      if (s.setting != "base") continue;
      for (auto baseline : attribution::citation_baselines()) {
        const std::string name = attribution::to_string(baseline);
        if (const ResultRecord* r =
                find_result(run.results, "base", s.epoch, corrected_test_set(test_set, name)))
          rows.push_back({&run, &s, r, stage_title("base") + " + " + name, "uncorrected"});
      }
    }
  }
  return rows;
}

// Table 2's paired tests, [row][column], with their p-values Holm-adjusted as one family: every
// p-value the table shows, so a reader may take any cell's p at its word.
struct PairedCells {
  std::vector<std::vector<const PairedComparison*>> tests;
  std::vector<std::vector<double>> holm;
  std::size_t family = 0;
};

PairedCells table2_paired(const std::vector<Table2Row>& rows) {
  PairedCells cells;
  std::vector<double> p_values;
  for (const auto& row : rows) {
    cells.tests.emplace_back();
    for (const auto& column : table2_paired_columns()) {
      const std::string against = column.against == "base" ? row.base_comparison : column.against;
      const PairedComparison* c =
          row.result ? find_comparison(row.result->paired, against, column.metric) : nullptr;
      cells.tests.back().push_back(c);
      p_values.push_back(c ? c->test.p_value : kNaN);
    }
  }
  const std::vector<double> adjusted = rewards::holm_adjusted(p_values);
  std::size_t k = 0;
  for (const auto& row : cells.tests) {
    cells.holm.emplace_back(adjusted.begin() + std::ptrdiff_t(k),
                            adjusted.begin() + std::ptrdiff_t(k + row.size()));
    k += row.size();
  }
  for (double p : p_values) cells.family += std::isnan(p) ? 0 : 1;
  return cells;
}

}  // namespace

std::string paired_cell(const PairedComparison* c, double p) {
  if (!c || std::isnan(c->test.difference)) return "–";
  return signed_points(c->test.difference) + " [" + signed_points(c->test.ci_low) + ", " +
         signed_points(c->test.ci_high) + "], " + p_text(p);
}

std::vector<std::string> test_sets_of(const std::vector<ResultRecord>& results,
                                      const std::string& first) {
  std::set<std::string> names;
  for (const auto& r : results)
    if (!is_baseline_test_set(r.test_set)) names.insert(r.test_set);
  std::vector<std::string> out;
  if (names.count(first)) out.push_back(first);
  for (const auto& n : names)
    if (n != first) out.push_back(n);
  return out;
}

TestSetRoles default_roles(const std::vector<ResultRecord>& results,
                           const std::string& in_distribution) {
  TestSetRoles roles{in_distribution, {}};
  for (const auto& t : test_sets_of(results))
    if (t != in_distribution) roles.out_of_distribution.push_back(t);
  return roles;
}

void check_roles(const TestSetRoles& roles, const std::vector<ResultRecord>& results,
                 const std::string& file) {
  auto sets = test_sets_of(results);
  const std::string known = join(sets, ", ");
  auto check = [&](const std::string& name, const std::string& role) {
    if (std::find(sets.begin(), sets.end(), name) == sets.end())
      fail_at(file, role, "test set '" + name + "' was not evaluated (evaluated: " + known + ")");
  };
  check(roles.in_distribution, "in-distribution test set");
  for (const auto& t : roles.out_of_distribution) {
    check(t, "out-of-distribution test set");
    if (t == roles.in_distribution)
      fail_at(file, "out-of-distribution test set",
              "'" + t + "' is also the in-distribution test set");
  }
}

std::vector<CorrelationRow> correlations(const RunSummary& run) {
  // The (stage, epoch) pairs of the run in table order; results are sorted that way already
  // when they come from results_from_archives, but a caller may pass them in any order.
  std::vector<std::pair<std::string, int>> checkpoints;
  for (const auto& r : run.results)
    if (std::find(checkpoints.begin(), checkpoints.end(), std::make_pair(r.stage, r.epoch)) ==
        checkpoints.end())
      checkpoints.push_back({r.stage, r.epoch});
  std::vector<CorrelationRow> out;
  for (const auto& ood : run.roles.out_of_distribution)
    for (const auto& metric : run.correlation_metrics) {
      std::vector<double> x, y;
      for (const auto& [stage, epoch] : checkpoints) {
        double a =
            metric_of(find_result(run.results, stage, epoch, run.roles.in_distribution), metric)
                .mean;
        double b = metric_of(find_result(run.results, stage, epoch, ood), metric).mean;
        if (std::isnan(a) || std::isnan(b)) continue;
        x.push_back(a);
        y.push_back(b);
      }
      out.push_back({metric, run.roles.in_distribution, ood, pearson(x, y)});
    }
  return out;
}

TextTable table2_markdown_table(const std::vector<RunSummary>& runs, const std::string& test_set) {
  TextTable table;
  table.header =
      header_with_model(runs, {"Tuning", "Epoch", "F1", "F1 chance", "Precision", "P chance",
                               "Recall", "R chance", "Answer Length", "Cited Distinct", "n"});
  table.numeric =
      numeric_columns(runs, {false, true, true, true, true, true, true, true, true, true, true});
  for (const auto& row : table2_rows(runs, test_set)) {
    const ResultRecord* r = row.result;
    table.rows.push_back(with_model(
        runs, *row.run,
        {row.title, std::to_string(row.selection->epoch), percent_with_interval(metric_of(r, "f1")),
         percent(metric_of(r, "chance_f1")), percent_with_interval(metric_of(r, "precision")),
         percent(metric_of(r, "chance_precision")), percent_with_interval(metric_of(r, "recall")),
         percent(metric_of(r, "chance_recall")), fixed(metric_of(r, "answer_length").mean, 1),
         fixed(metric_of(r, "distinct_citations").mean, 2), count_cell(r)}));
  }
  return table;
}

TextTable table2_paired_markdown_table(const std::vector<RunSummary>& runs,
                                       const std::string& test_set) {
  const auto rows = table2_rows(runs, test_set);
  const PairedCells cells = table2_paired(rows);
  TextTable table;
  std::vector<std::string> header = {"Tuning", "Epoch"};
  std::vector<bool> numeric = {false, true};
  for (const auto& column : table2_paired_columns()) {
    header.push_back(column.title);
    numeric.push_back(true);
  }
  table.header = header_with_model(runs, header);
  table.numeric = numeric_columns(runs, numeric);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::vector<std::string> row = {rows[i].title, std::to_string(rows[i].selection->epoch)};
    for (std::size_t c = 0; c < cells.tests[i].size(); ++c)
      row.push_back(paired_cell(cells.tests[i][c], cells.holm[i][c]));
    table.rows.push_back(with_model(runs, *rows[i].run, row));
  }
  return table;
}

std::string table2_markdown_section(const std::vector<RunSummary>& runs,
                                    const std::string& test_set) {
  const auto rows = table2_rows(runs, test_set);
  const std::size_t family = table2_paired(rows).family;
  std::string out = to_markdown(table2_markdown_table(runs, test_set));
  if (family == 0) {  // results.json from before the paired tests, read without the archives
    out +=
        "\nThese results carry no paired tests: they were written before citeforge computed "
        "them, and the run's evaluation archives, from which `citeforge tables` computes "
        "them, are not here.\n";
    return out;
  }
  // Appended piece by piece: GCC 12 warns falsely (-Wstringop-overflow) on the one-expression form.
  out +=
      "\nPaired on the same questions: the mean per-question difference in percentage points, "
      "its 95% paired bootstrap interval and a two-sided sign-flip permutation p-value, "
      "Holm-adjusted over the ";
  out += std::to_string(family);
  out +=
      " p-values of this table. A difference is a gain only where its interval excludes 0; an "
      "interval is per comparison, so one that excludes 0 beside a large adjusted p may be "
      "one of the table's chance findings.\n\n";
  out += to_markdown(table2_paired_markdown_table(runs, test_set));
  return out;
}

TextTable table2_csv_table(const std::vector<RunSummary>& runs, const std::string& test_set) {
  const std::vector<std::string> metrics = {
      "f1",        "precision",        "recall",       "answer_length", "distinct_citations",
      "chance_f1", "chance_precision", "chance_recall"};
  TextTable table;
  table.header = {"model", "setting", "epoch", "checkpoint", "test_set", "count"};
  for (const auto& m : metrics)
    for (const char* part : {"", "_ci_low", "_ci_high"}) table.header.push_back(m + part);
  // Paired columns: f1_vs_chance, its interval, count, raw p and Holm-adjusted p.
  for (const auto& column : table2_paired_columns())
    for (const char* part : {"", "_ci_low", "_ci_high", "_count", "_p", "_p_holm"})
      table.header.push_back(column.metric + "_vs_" + column.against + part);
  const auto rows = table2_rows(runs, test_set);
  const PairedCells cells = table2_paired(rows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Selection& s = *rows[i].selection;
    const ResultRecord* r = rows[i].result;
    // A baseline row's setting names its rule: "base+cite_bm25".
    const std::string setting = rows[i].result && rows[i].result->test_set != test_set
                                    ? s.setting + rows[i].result->test_set.substr(test_set.size())
                                    : s.setting;
    std::vector<std::string> row = {
        rows[i].run->name,
        setting,
        std::to_string(s.epoch),
        s.checkpoint,
        test_set,
        r && !r->metrics.empty() ? std::to_string(r->metrics.front().second.count) : ""};
    for (const auto& m : metrics) {
      rewards::Aggregate a = metric_of(r, m);
      row.insert(row.end(), {exact(a.mean), exact(a.ci_low), exact(a.ci_high)});
    }
    for (std::size_t c = 0; c < cells.tests[i].size(); ++c) {
      const PairedComparison* test = cells.tests[i][c];
      if (!test) {
        row.insert(row.end(), 6, "");
        continue;
      }
      row.insert(row.end(), {exact(test->test.difference), exact(test->test.ci_low),
                             exact(test->test.ci_high), std::to_string(test->test.count),
                             exact(test->test.p_value), exact(cells.holm[i][c])});
    }
    table.rows.push_back(row);
  }
  return table;
}

// Table 1's metrics, as the evidence-QA paper reports them: source quality under citeforge's
// stricter definition and under the paper's own (no cited irrelevant source), format quality,
// and, where some evaluation judged it (eval.attributability_threshold), attributability beside
// its chance level.
std::vector<std::pair<std::string, std::string>> table1_metrics(
    const std::vector<RunSummary>& runs) {
  std::vector<std::pair<std::string, std::string>> metrics = {
      {"source_quality", "source"},
      {"source_quality_paper", "source (paper)"},
      {"format_quality", "format"}};
  for (const auto& run : runs)
    for (const auto& r : run.results)
      if (find_metric(r, "attributability")) {
        metrics.emplace_back("attributability", "attr.");
        metrics.emplace_back("chance_attributability", "attr. chance");
        return metrics;
      }
  return metrics;
}

TextTable table1_markdown_table(const std::vector<RunSummary>& runs) {
  auto test_sets = all_test_sets(runs);
  const auto metrics = table1_metrics(runs);
  TextTable table;
  std::vector<std::string> header = {"Setting", "Epoch"};
  std::vector<bool> numeric = {false, true};
  for (const auto& t : test_sets)
    for (const auto& [metric, title] : metrics) {
      header.push_back(t + " " + title);
      numeric.push_back(true);
    }
  table.header = header_with_model(runs, header);
  table.numeric = numeric_columns(runs, numeric);
  for (const auto& run : runs)
    for (const auto& s : run.selections) {
      std::vector<std::string> row = {stage_title(s.setting), std::to_string(s.epoch)};
      for (const auto& t : test_sets)
        for (const auto& [metric, title] : metrics)
          row.push_back(
              percent(metric_of(find_result(run.results, s.setting, s.epoch, t), metric)));
      table.rows.push_back(with_model(runs, run, row));
    }
  return table;
}

TextTable table1_csv_table(const std::vector<RunSummary>& runs) {
  TextTable table;
  table.header = {"model",  "setting", "epoch",  "checkpoint", "test_set",
                  "metric", "mean",    "ci_low", "ci_high",    "count"};
  for (const auto& run : runs)
    for (const auto& s : run.selections)
      for (const auto& t : test_sets_of(run.results, run.roles.in_distribution)) {
        const ResultRecord* r = find_result(run.results, s.setting, s.epoch, t);
        if (!r) continue;
        for (const auto& [metric, title] : table1_metrics(runs)) {
          const rewards::Aggregate* a = find_metric(*r, metric);
          if (!a) continue;  // results written before the metric existed
          table.rows.push_back({run.name, s.setting, std::to_string(s.epoch), s.checkpoint, t,
                                metric, exact(a->mean), exact(a->ci_low), exact(a->ci_high),
                                std::to_string(a->count)});
        }
      }
  return table;
}

TextTable table3_markdown_table(const std::vector<RunSummary>& runs) {
  // Rows are the union of every run's (ID, OOD, metric) triples, in first-seen order.
  std::vector<std::tuple<std::string, std::string, std::string>> keys;
  std::vector<std::map<std::tuple<std::string, std::string, std::string>, PearsonResult>> cells;
  for (const auto& run : runs) {
    cells.emplace_back();
    for (const auto& row : correlations(run)) {
      auto key = std::make_tuple(row.in_distribution, row.out_of_distribution, row.metric);
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
      cells.back()[key] = row.result;
    }
  }
  TextTable table;
  table.header = {"Test sets", "Metric"};
  table.numeric = {false, false};
  for (std::size_t i = 0; i < runs.size(); ++i) {
    table.header.push_back(runs[i].name.empty() ? "r" : runs[i].name);
    table.numeric.push_back(true);
  }
  for (const auto& key : keys) {
    const auto& [id, ood, metric] = key;
    std::vector<std::string> row = {id + " & " + ood, metric};
    for (const auto& run_cells : cells) {
      auto it = run_cells.find(key);
      row.push_back(it == run_cells.end() ? "–" : correlation_cell(it->second));
    }
    table.rows.push_back(row);
  }
  return table;
}

TextTable table3_csv_table(const std::vector<RunSummary>& runs) {
  TextTable table;
  table.header = {"model", "in_distribution", "out_of_distribution", "metric", "n", "r", "p"};
  for (const auto& run : runs)
    for (const auto& row : correlations(run))
      table.rows.push_back({run.name, row.in_distribution, row.out_of_distribution, row.metric,
                            std::to_string(row.result.n), exact(row.result.r),
                            exact(row.result.p)});
  return table;
}

std::string table2_markdown(const std::vector<RunSummary>& runs) {
  std::string out;
  // Appended piece by piece: GCC 12 warns falsely (-Wstringop-overflow) on the one-expression form.
  for (const auto& t : all_test_sets(runs)) {
    if (!out.empty()) out += '\n';
    out += "## Table 2: ";
    out += t;
    out += "\n\n";
    out += table2_markdown_section(runs, t);
  }
  return out;
}

std::string tables_markdown(const std::vector<RunSummary>& runs) {
  std::string names;
  for (const auto& run : runs) names += (names.empty() ? "" : ", ") + run.name;
  std::string out = "# Tables: " + names + "\n\n";
  for (const auto& run : runs)
    if (auto note = selection_note(run); !note.empty()) out += note + "\n";
  out +=
      "F1, precision and recall in percent with their 95% bootstrap interval; answer length "
      "in words; cited distinct = distinct valid sources cited. The chance columns are what "
      "citing as many documents drawn at random from each prompt scores: a gain that moves the "
      "chance column as much is a change in how many documents are cited, not in which.\n\n";
  out += table2_markdown(runs);
  out +=
      "\n## Table 1: source and format quality (%)\n\n" + to_markdown(table1_markdown_table(runs));
  out += "\n## Table 3: Pearson correlation between test sets across all checkpoints\n\n" +
         to_markdown(table3_markdown_table(runs)) +
         "\nr over every evaluated (stage, epoch); two-sided p from Student's t with n - 2 "
         "degrees of freedom. ** p < 0.001, * p < 0.01.\n";
  return out;
}

std::string table2_file(const std::string& test_set, const std::string& extension) {
  return "table2_" + test_set + extension;
}

std::vector<std::string> write_tables(const std::string& run_dir, const RunSummary& run) {
  fs::path dir = RunDir{run_dir}.tables();
  std::vector<RunSummary> runs = {run};
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const std::string& text) {
    std::string path = (dir / name).string();
    write_file_atomically(path, text);
    written.push_back(path);
  };
  for (const auto& t : test_sets_of(run.results, run.roles.in_distribution)) {
    write(table2_file(t, ".md"), table2_markdown_section(runs, t));
    write(table2_file(t, ".csv"), to_csv(table2_csv_table(runs, t)));
  }
  write("table1_source_quality.md", to_markdown(table1_markdown_table(runs)));
  write("table1_source_quality.csv", to_csv(table1_csv_table(runs)));
  write("table3_correlation.md", to_markdown(table3_markdown_table(runs)));
  write("table3_correlation.csv", to_csv(table3_csv_table(runs)));
  write("tables.md", tables_markdown(runs));
  return written;
}

}  // namespace citeforge::trainer
