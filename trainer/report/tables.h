// The papers' tables from a run's results and selections (docs/design.md §5), as Markdown and CSV:
//   Table 2 (RAGE): per test set, one row per setting (Base, SFT, PPO, SFT+PPO; each the
//     selected checkpoint) with F1, precision, recall (percent, 95% bootstrap interval), answer
//     length and distinct citations, and the paired tests of F1, precision and recall against
//     chance and against the base (p-values Holm-adjusted over the table).
//   Table 1 (evidence-QA): source quality per setting and test set.
//   Table 3 (evidence-QA): Pearson r and its p-value between the in-distribution test set and
//     each out-of-distribution test set, across every evaluated checkpoint of the run.
// Several runs tabled together get a leading Model column (RAGE lists its base models that way)
// or, in Table 3, one column per run (the paper's Zephyr / Llama columns).
#pragma once

#include <string>
#include <vector>

#include "trainer/eval/results.h"
#include "trainer/eval/selection.h"
#include "trainer/report/correlation.h"
#include "trainer/report/text_table.h"

namespace citeforge::trainer {

// Which test set is in-distribution and which are out-of-distribution, for Table 3.
struct TestSetRoles {
  std::string in_distribution;
  std::vector<std::string> out_of_distribution;
};

struct RunSummary {
  std::string name;  // the Model column / Table 3 column when runs are combined
  std::vector<ResultRecord> results;
  std::vector<Selection> selections;  // base first, as select_checkpoints returns them
  TestSetRoles roles;
  std::vector<std::string> correlation_metrics;  // Table 3's metrics, e.g. f1, source_quality
};

// The test sets evaluated in `results`: `first` (when present) leads, the rest by name. A
// citation baseline's set ("test+cite_bm25") is not one: it is a row of its test set's Table 2.
std::vector<std::string> test_sets_of(const std::vector<ResultRecord>& results,
                                      const std::string& first = "");

// `in_distribution` as the ID set and every other evaluated test set as OOD.
TestSetRoles default_roles(const std::vector<ResultRecord>& results,
                           const std::string& in_distribution);
// A role naming a test set the run never evaluated, or ID listed among OOD, is
// citeforge::Error naming `file`, the role and the test sets there are.
void check_roles(const TestSetRoles& roles, const std::vector<ResultRecord>& results,
                 const std::string& file);

struct CorrelationRow {
  std::string metric;
  std::string in_distribution;
  std::string out_of_distribution;
  PearsonResult result;
};

// Table 3's numbers: for each OOD set and metric, r over every (stage, epoch) evaluated on both
// test sets (NaN means are skipped).
std::vector<CorrelationRow> correlations(const RunSummary& run);

// "+38.8 [+30.1, +47.0], p = 0.012": a paired comparison in points with `p` (Table 2 passes the
// Holm-adjusted one, a model card the comparison's own); "–" when there is none.
std::string paired_cell(const PairedComparison* comparison, double p);

TextTable table2_markdown_table(const std::vector<RunSummary>& runs, const std::string& test_set);
// Table 2's paired tests: per row, F1, precision and recall minus chance and minus the base model
// on the same questions (points, paired 95% interval, Holm-adjusted sign-flip p).
TextTable table2_paired_markdown_table(const std::vector<RunSummary>& runs,
                                       const std::string& test_set);
// Table 2 of one test set as its .md file holds it: the table, a note on the paired tests and
// their table.
std::string table2_markdown_section(const std::vector<RunSummary>& runs,
                                    const std::string& test_set);
TextTable table2_csv_table(const std::vector<RunSummary>& runs, const std::string& test_set);
TextTable table1_markdown_table(const std::vector<RunSummary>& runs);
TextTable table1_csv_table(const std::vector<RunSummary>& runs);
TextTable table3_markdown_table(const std::vector<RunSummary>& runs);
TextTable table3_csv_table(const std::vector<RunSummary>& runs);

// Table 2 for every test set of `runs`, each under a "## Table 2: <test set>" heading.
std::string table2_markdown(const std::vector<RunSummary>& runs);
// All three tables with headings and notes: a run's tables.md, or the combined file of several.
std::string tables_markdown(const std::vector<RunSummary>& runs);

// Writes RUN_DIR/tables/: table2_<test set>.{md,csv}, table1_source_quality.{md,csv},
// table3_correlation.{md,csv} and tables.md; returns the paths written.
std::vector<std::string> write_tables(const std::string& run_dir, const RunSummary& run);
// The name of a test set's Table 2 in tables/: "table2_<test set><extension>".
std::string table2_file(const std::string& test_set, const std::string& extension = ".md");

}  // namespace citeforge::trainer
