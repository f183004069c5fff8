// `citeforge score`: scores answers (from a file or a named reference of each example) against
// the examples' sources and labels, prints a table, and with --out writes per_example.jsonl and
// summary.json (docs/design.md §6).
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/file_io.h"
#include "data/answers.h"
#include "data/example.h"
#include "rewards/metrics.h"
#include "trainer/cli/answers_input.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"
#include "trainer/eval/eval_record.h"
#include "trainer/eval/paired.h"

namespace citeforge::trainer {

const CliCommand& score_cli() {
  static const CliCommand command = [] {
    CliCommand c{"score", "score answers' citations against an example file", "",
                 "Give --answers or --reference.", answer_options()};
    c.options.push_back({"out", "DIR", "write per_example.jsonl and summary.json here"});
    c.options.push_back({"invalid-citations", "penalize|ignore",
                         "whether citations of no source count as wrong", "penalize"});
    c.options.push_back({"overlap-reference", "NAME",
                         "also score citation overlap with this reference answer (HAGRID)"});
    c.options.push_back({"baseline", "ANSWERS.jsonl|ARCHIVE.h5",
                         "also test the answers against these (e.g. the base model's, or the "
                         "uncorrected ones), paired on the same questions"});
    return c;
  }();
  return command;
}

namespace {

// Metrics that depend on the relevance labels. When the labels were derived from the very
// answers being scored (silver labels from `--reference NAME`), these only measure the answer
// against itself, so they are reported as not applicable.
bool uses_labels(const std::string& metric) {
  static const std::set<std::string> label_metrics = {
      "precision", "recall", "f1", "reward", "source_quality", "source_quality_paper"};
  return label_metrics.count(metric) || metric.rfind("chance_", 0) == 0;
}

// How many examples have silver labels taken from the answers `--reference` scores.
std::size_t circular_labels(const std::vector<data::Example>& examples, const CliArgs& cli) {
  auto reference = cli.get("reference");
  if (!reference) return 0;
  std::size_t n = 0;
  for (const auto& e : examples)
    n += e.labels == data::LabelKind::silver && e.labels_from == *reference ? 1 : 0;
  return n;
}

}  // namespace

int command_score(const Args& args) {
  CliArgs cli = parse_cli(score_cli(), args);
  cli.no_positional();
  if (cli.has("answers") == cli.has("reference"))
    throw Error("score: give exactly one of --answers FILE or --reference NAME");
  std::string data_path = cli.require("data");
  rewards::MetricOptions options;
  options.invalid_citations =
      rewards::parse_invalid_citations(cli.require("invalid-citations"), "--invalid-citations");
  auto overlap_name = cli.get("overlap-reference");
  auto baseline_path = cli.get("baseline");

  std::vector<data::Example> examples = data::read_examples_jsonl(data_path);
  if (examples.empty()) fail_at(data_path, "", "no examples to score");
  std::vector<std::string> answers = answers_for(examples, data_path, cli);

  if (overlap_name)  // checked here to name the flag
    for (const auto& e : examples)
      if (!e.references.count(*overlap_name))
        fail_at(data_path, "example '" + e.id + "'",
                "no reference answer '" + *overlap_name +
                    "' for --overlap-reference (it has: " + list_names(e.references) + ")");
  // The same scoring as a run's evaluations, so score's files agree with the archives.
  EvalOptions eval;
  eval.metrics = options;
  eval.overlap_reference = overlap_name;
  eval.data_path = data_path;
  const EvalRecord record = evaluate_answers(examples, answers, eval);
  const std::size_t circular = circular_labels(examples, cli);
  std::string not_applicable;
  if (circular > 0) {
    not_applicable = "the relevance labels of " + std::to_string(circular) + " of " +
                     std::to_string(examples.size()) + " examples were derived from the '" +
                     *cli.get("reference") + "' answers being scored";
    std::printf(
        "note: %s, so the metrics that use the labels (precision, recall, F1, reward, "
        "source quality and their chance references) are not applicable\n",
        not_applicable.c_str());
  }
  auto applicable = [&](const std::string& metric) {
    return not_applicable.empty() || !uses_labels(metric);
  };
  std::string per_example;
  for (std::size_t i = 0; i < record.ids.size(); ++i) {
    nlohmann::ordered_json line;
    line["id"] = record.ids[i];
    for (const auto& [name, column] : record.metrics)
      line[name] = applicable(name) ? json_number(column[i]) : nlohmann::ordered_json();
    per_example += line.dump() + "\n";
  }
  // Paired tests against chance and the baseline's answers to the same questions (by id, under
  // the name "base" as a run's results call the model the answers are compared with). With
  // circular labels they would test the answers against themselves, so there are none.
  std::optional<EvalRecord> baseline;
  if (baseline_path) {
    std::vector<data::Example> answered = examples;
    const auto baseline_answers = answers_from_file(answered, data_path, *baseline_path);
    EvalOptions baseline_eval = eval;
    baseline_eval.data_path = *baseline_path;
    baseline = evaluate_answers(answered, baseline_answers, baseline_eval);
  }
  std::vector<PairedComparison> paired;
  if (circular == 0) paired = paired_comparisons(record, baseline ? &*baseline : nullptr, nullptr);
  nlohmann::ordered_json summary;
  std::printf("%-27s %10s  %-22s %6s\n", "metric", "mean", "95% CI (bootstrap)", "n");
  for (const auto& [name, a] : record.aggregates) {
    if (!applicable(name)) {
      summary[name] = {{"mean", nullptr}, {"count", a.count}, {"not_applicable", not_applicable}};
      std::printf("%-27s %10s\n", name.c_str(), "n/a");
      continue;
    }
    summary[name] = {{"mean", json_number(a.mean)},
                     {"count", a.count},
                     {"ci_low", json_number(a.ci_low)},
                     {"ci_high", json_number(a.ci_high)}};
    std::printf("%-27s %10.4f  [%8.4f, %8.4f]   %6zu\n", name.c_str(), a.mean, a.ci_low, a.ci_high,
                a.count);
  }
  if (!paired.empty()) {
    std::printf(
        "\npaired on the same questions (mean difference, 95%% paired bootstrap interval, "
        "sign-flip p; unadjusted)\n");
    std::printf("%-14s %-21s %10s  %-22s %10s %6s\n", "against", "metric", "difference", "95% CI",
                "p", "n");
    for (const auto& c : paired)
      std::printf("%-14s %-21s %+10.4f  [%+8.4f, %+8.4f] %10.2g %6zu\n", c.against.c_str(),
                  c.metric.c_str(), c.test.difference, c.test.ci_low, c.test.ci_high,
                  c.test.p_value, c.test.count);
    summary["paired"] = paired_to_json(paired);
  }
  if (auto out = cli.get("out")) {
    std::filesystem::create_directories(*out);
    write_file_atomically((std::filesystem::path(*out) / "per_example.jsonl").string(),
                          per_example);
    write_file_atomically((std::filesystem::path(*out) / "summary.json").string(),
                          summary.dump(2) + "\n");
    std::printf("wrote %s/per_example.jsonl and %s/summary.json\n", out->c_str(), out->c_str());
  }
  return 0;
}

}  // namespace citeforge::trainer
