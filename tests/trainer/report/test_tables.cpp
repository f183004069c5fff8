// The papers' tables and the metric-vs-epoch plots from a run's results.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "tests/support/test_paths.h"
#include "trainer/report/plots.h"
#include "trainer/report/tables.h"

using namespace citeforge;
using namespace citeforge::trainer;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

ResultRecord result(const std::string& stage, int epoch, const std::string& test_set, double f1) {
  ResultRecord r;
  r.stage = stage;
  r.epoch = epoch;
  r.test_set = test_set;
  r.checkpoint =
      stage == "base" ? "base_model" : "checkpoints/" + stage + "-" + std::to_string(epoch);
  for (const char* m : {"f1", "precision", "recall"})
    r.metrics.push_back({m, {f1, 50, f1 - 0.05, f1 + 0.05}});
  r.metrics.push_back({"answer_length", {7.5, 50, 7, 8}});
  r.metrics.push_back({"distinct_citations", {1.25, 50, 1, 1.5}});
  r.metrics.push_back({"source_quality", {f1 / 2, 50, 0, 1}});
  return r;
}

RunSummary sample_run() {
  RunSummary run;
  run.name = "demo";
  // ID and OOD scores rise together over the SFT epochs and PPO iterations.
  run.results = {result("base", 0, "validation", 0.10),    result("base", 0, "ood", 0.12),
                 result("sft", 1, "validation", 0.40),     result("sft", 1, "ood", 0.35),
                 result("sft", 2, "validation", 0.60),     result("sft", 2, "ood", 0.50),
                 result("sft+ppo", 1, "validation", 0.70), result("sft+ppo", 1, "ood", 0.66)};
  run.selections = select_checkpoints(run.results, {"f1", "validation"});
  run.roles = default_roles(run.results, "validation");
  run.correlation_metrics = {"f1"};
  return run;
}

}  // namespace

TEST_CASE("Table 2 has one row per setting with the selected epoch", "[trainer][tables]") {
  auto md = to_markdown(table2_markdown_table({sample_run()}, "ood"));
  INFO(md);
  CHECK(md.rfind("| Tuning ", 0) == 0);
  CHECK(md.find("| Epoch |") != std::string::npos);
  CHECK(md.find("Base") != std::string::npos);
  CHECK(md.find("SFT+PPO") != std::string::npos);
  // SFT's selected epoch is 2 (best on validation); its OOD F1 is 50.0 with interval.
  CHECK(md.find("| SFT     |     2 | 50.0 [45.0, 55.0] |") != std::string::npos);
  CHECK(md.find("7.5") != std::string::npos);
  auto csv = to_csv(table2_csv_table({sample_run()}, "ood"));
  CHECK(csv.rfind("model,setting,epoch,checkpoint,test_set,count,f1", 0) == 0);
  CHECK(csv.find("demo,sft,2,checkpoints/sft-2,ood,50,0.5") != std::string::npos);
}

TEST_CASE("Table 3 correlates ID and OOD across every checkpoint", "[trainer][tables]") {
  auto rows = correlations(sample_run());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].in_distribution == "validation");
  CHECK(rows[0].out_of_distribution == "ood");
  CHECK(rows[0].result.n == 4);
  CHECK(rows[0].result.r > 0.95);
  auto md = tables_markdown({sample_run()});
  CHECK(md.find("## Table 1: source and format quality") != std::string::npos);
  // Both source-quality definitions and format quality, per test set; a metric the results do
  // not hold (here: the paper's definition, format quality) shows as a dash, not as 0.
  CHECK(md.find("| validation source | validation source (paper) | validation format |") !=
        std::string::npos);
  const std::string table1 = md.substr(md.find("## Table 1"));
  CHECK(table1.substr(0, table1.find("## Table 3")).find("–") != std::string::npos);
  CHECK(md.find("## Table 3") != std::string::npos);
}

TEST_CASE("PPO curves are drawn from metrics.jsonl, the last record of an iteration winning",
          "[trainer][plots]") {
  auto dir = testing::temp_dir("ppo_plots");
  CHECK(write_ppo_plots(dir.string()).scripts.empty());  // no metrics.jsonl: nothing to draw
  auto record = [](const std::string& stage, int it, double reward) {
    return nlohmann::json{{"stage", stage},        {"iteration", it},     {"reward_mean", reward},
                          {"precision_mean", 0.5}, {"recall_mean", 0.25}, {"kl_k1", 0.1 * it},
                          {"kl_k3", 0.08 * it},    {"beta", 0.05}}
        .dump();
  };
  write_file_atomically((dir / "metrics.jsonl").string(),
                        nlohmann::json{{"stage", "sft"}, {"epoch", 1}, {"loss", 2.0}}.dump() +
                            "\n" + record("ppo", 1, 0.2) + "\n" + record("ppo", 2, 0.3) + "\n" +
                            record("ppo", 2, 0.35) + "\n" + record("sft+ppo", 1, 0.6) +
                            "\n{\"stage\": \"ppo\", \"iter\n");
  auto report = write_ppo_plots(dir.string());
  REQUIRE(report.warnings.size() == 1);  // the cut last line, named
  CHECK_THAT(report.warnings[0], Contains("line 6") && Contains("not JSON"));
  REQUIRE(report.images.size() == 2);  // scripts/setup.sh installs gnuplot
  for (const auto& png : report.images) CHECK(read_file(png).substr(1, 3) == "PNG");
  const std::string data = read_file((dir / "plots" / "ppo.dat").string());
  CHECK_THAT(data, Contains("# setting ppo\n1 0.2 0.5 0.25 0.1 0.08 0.05\n2 0.35 "));
  CHECK_THAT(data, Contains("# setting sft+ppo\n1 0.6 "));
  CHECK_THAT(data, !Contains("2 0.3 "));
}

TEST_CASE("plots render a PNG per test set and metric", "[trainer][plots]") {
  auto dir = testing::temp_dir("plots");
  PlotOptions options;
  options.metrics = {"f1"};
  auto report = write_plots(dir.string(), sample_run().results, options);
  INFO("warnings: " << (report.warnings.empty() ? "" : report.warnings[0]));
  REQUIRE(report.warnings.empty());  // scripts/setup.sh installs gnuplot
  REQUIRE(report.images.size() == 2);
  for (const auto& png : report.images) {
    const std::string bytes = read_file(png);
    CHECK(bytes.size() > 1000);
    CHECK(bytes.substr(1, 3) == "PNG");
  }
  // Without gnuplot the data and scripts are still written, with a warning instead of an error.
  options.gnuplot = "/nonexistent/gnuplot";
  auto missing = write_plots((dir / "again").string(), sample_run().results, options);
  CHECK(missing.images.empty());
  CHECK_FALSE(missing.warnings.empty());
  CHECK(fs::exists(dir / "again" / "plots" / "ood.gp"));
}

TEST_CASE("Table 2 shows the paired tests with p-values Holm-adjusted over the table",
          "[trainer][tables][paired]") {
  RunSummary run = sample_run();
  // On 'ood': the selected SFT epoch is 2 and SFT+PPO epoch 1. Each gets F1 against chance and
  // the base; the base row against chance only. Five p-values in all: 0.01, 0.02 (SFT), 0.004
  // (SFT+PPO vs chance), 0.3 (vs base) and 0.5 (base vs chance). Holm by hand, m = 5: sorted
  // 0.004*5 = 0.02, 0.01*4 = 0.04, 0.02*3 = 0.06, 0.3*2 = 0.6, 0.5*1 = 0.5 -> made monotone 0.6.
  auto add = [&](const std::string& stage, const std::string& against, double difference,
                 double p) {
    for (auto& r : run.results)
      if (r.stage == stage && r.test_set == "ood")
        r.paired.push_back(
            {against, "f1", {difference, 50, difference - 0.05, difference + 0.05, p}});
  };
  add("base", "chance", 0.01, 0.5);
  add("sft", "chance", 0.25, 0.01);
  add("sft", "base", 0.38, 0.02);
  add("sft+ppo", "chance", -0.1, 0.004);
  add("sft+ppo", "base", 0.02, 0.3);
  run.selections = select_checkpoints(run.results, {"f1", "validation"});

  const std::string section = table2_markdown_section({run}, "ood");
  INFO(section);
  CHECK(section.find("Holm-adjusted over the 5 p-values of this table") != std::string::npos);
  // SFT: +25.0 points over chance [+20.0, +30.0], Holm p 0.04; +38.0 over the base, p 0.06.
  CHECK(section.find("+25.0 [+20.0, +30.0], p = 0.04") != std::string::npos);
  CHECK(section.find("+38.0 [+33.0, +43.0], p = 0.06") != std::string::npos);
  // SFT+PPO below chance, and a test absent from the results shows as a dash.
  CHECK(section.find("-10.0 [-15.0, -5.0], p = 0.02") != std::string::npos);
  const std::string paired = section.substr(section.find("F1 − chance"));
  const std::size_t base_at = paired.find("| Base");
  const std::string base_row = paired.substr(base_at, paired.find('\n', base_at) - base_at);
  CHECK(base_row.find("+1.0 [-4.0, +6.0], p = 0.6 |") != std::string::npos);

  const std::string csv = to_csv(table2_csv_table({run}, "ood"));
  CHECK(csv.find("f1_vs_chance,f1_vs_chance_ci_low,f1_vs_chance_ci_high,f1_vs_chance_count,"
                 "f1_vs_chance_p,f1_vs_chance_p_holm") != std::string::npos);
  CHECK(csv.find("0.25,0.2,0.3,50,0.01,0.04") != std::string::npos);
  CHECK(csv.find(",50,0.3,0.6") != std::string::npos);
}

TEST_CASE("Table 2 of results without paired tests says so instead of an empty table",
          "[trainer][tables][paired]") {
  const std::string section = table2_markdown_section({sample_run()}, "ood");
  CHECK(section.find("carry no paired tests") != std::string::npos);
  CHECK(section.find("F1 − chance") == std::string::npos);
}
