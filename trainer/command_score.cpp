// `citeforge score`: scores answers (from a file or a named reference of each example) against
// the examples' sources and labels, prints a table, and with --out writes per_example.jsonl and
// summary.json (DESIGN.md §6).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/file_io.h"
#include "data/answers.h"
#include "data/example.h"
#include "rewards/aggregate.h"
#include "rewards/metrics.h"
#include "trainer/cli_args.h"
#include "trainer/commands.h"

namespace citeforge::trainer {

namespace {

constexpr const char* kUsage =
    "usage: citeforge score --data FILE.jsonl (--reference NAME | --answers ANSWERS.jsonl) "
    "[--out DIR] [--invalid-citations penalize|ignore] [--overlap-reference NAME]";

std::string list_names(const std::map<std::string, std::string>& references) {
  std::string names;
  for (const auto& [name, answer] : references) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

// The answer to score for each example, in the order of the data file.
std::vector<std::string> answers_for(const std::vector<data::Example>& examples,
                                     const std::string& data_path, const CliArgs& cli) {
  std::vector<std::string> out;
  if (auto reference = cli.get("reference")) {
    for (const auto& e : examples) {
      auto it = e.references.find(*reference);
      if (it == e.references.end())
        fail_at(
            data_path, "example '" + e.id + "'",
            "no reference answer '" + *reference + "' (it has: " + list_names(e.references) + ")");
      out.push_back(it->second);
    }
    return out;
  }
  std::string answers_path = cli.require("answers");
  auto answers = data::read_answers_jsonl(answers_path);
  std::map<std::string, bool> known;
  for (const auto& e : examples) known[e.id] = true;
  for (const auto& [id, answer] : answers)
    if (!known.count(id))
      fail_at(answers_path, "id '" + id + "'", "no such example in " + data_path);
  std::size_t missing = 0;
  std::string first_missing;
  for (const auto& e : examples) {
    auto it = answers.find(e.id);
    if (it == answers.end()) {
      if (missing++ == 0) first_missing = e.id;
      continue;
    }
    out.push_back(it->second);
  }
  if (missing > 0)
    fail_at(answers_path, "",
            "no answer for example '" + first_missing + "'" +
                (missing > 1 ? " and " + std::to_string(missing - 1) + " more" : ""));
  return out;
}

nlohmann::ordered_json number(double value) {
  // Integral metrics print as integers; NaN (empty aggregate) becomes null.
  if (value != value) return nullptr;
  if (value == static_cast<double>(static_cast<long long>(value)) && std::abs(value) < 1e15)
    return static_cast<long long>(value);
  return value;
}

}  // namespace

int command_score(const Args& args) {
  CliArgs cli = parse_cli(
      "score", args,
      {"data", "answers", "reference", "out", "invalid-citations", "overlap-reference"}, {});
  if (!cli.positional.empty())
    throw Error("score: unexpected argument '" + cli.positional.front() + "'; " + kUsage);
  if (cli.has("answers") == cli.has("reference"))
    throw Error(std::string("score: give exactly one of --answers FILE or --reference NAME; ") +
                kUsage);
  std::string data_path = cli.require("data");
  rewards::MetricOptions options;
  options.invalid_citations = rewards::parse_invalid_citations(
      cli.get_or("invalid-citations", "penalize"), "--invalid-citations");
  auto overlap_name = cli.get("overlap-reference");

  std::vector<data::Example> examples = data::read_examples_jsonl(data_path);
  if (examples.empty()) fail_at(data_path, "", "no examples to score");
  std::vector<std::string> answers = answers_for(examples, data_path, cli);

  std::vector<std::string> names;
  std::map<std::string, std::vector<double>> columns;
  std::string per_example;
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const auto& e = examples[i];
    std::optional<std::string> overlap_with;
    if (overlap_name) {
      auto it = e.references.find(*overlap_name);
      if (it == e.references.end())
        fail_at(data_path, "example '" + e.id + "'",
                "no reference answer '" + *overlap_name +
                    "' for --overlap-reference (it has: " + list_names(e.references) + ")");
      overlap_with = it->second;
    }
    auto values =
        rewards::named_values(rewards::score_answer(e, answers[i], options, overlap_with));
    nlohmann::ordered_json record;
    record["id"] = e.id;
    for (const auto& [name, value] : values) {
      record[name] = number(value);
      if (i == 0) names.push_back(name);
      columns[name].push_back(value);
    }
    per_example += record.dump() + "\n";
  }

  nlohmann::ordered_json summary;
  std::printf("%-20s %10s  %-22s %6s\n", "metric", "mean", "95% CI (bootstrap)", "n");
  for (const auto& name : names) {
    rewards::Aggregate a = rewards::aggregate(columns[name]);
    summary[name] = {{"mean", number(a.mean)},
                     {"count", a.count},
                     {"ci_low", number(a.ci_low)},
                     {"ci_high", number(a.ci_high)}};
    std::printf("%-20s %10.4f  [%8.4f, %8.4f]   %6zu\n", name.c_str(), a.mean, a.ci_low, a.ci_high,
                a.count);
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
