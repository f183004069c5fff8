#include "trainer/eval/eval_record.h"

#include <cctype>
#include <cmath>

#include "attribution/citation_baselines.h"
#include "attribution/citefix.h"
#include "common/error.h"

namespace citeforge::trainer {

const std::vector<std::string>& stage_names() {
  static const std::vector<std::string> names = {"base", "sft", "ppo", "sft+ppo"};
  return names;
}

bool is_stage(const std::string& name) {
  for (const auto& stage : stage_names())
    if (stage == name) return true;
  return false;
}

std::string stage_title(const std::string& stage) {
  if (stage == "base") return "Base";
  std::string out;
  for (char c : stage) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool is_plain_name(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '+' &&
        c != '-' && c != '@')
      return false;
  return true;
}

std::string corrected_test_set(const std::string& test_set, const std::string& method) {
  return test_set + "+" + method;
}

std::optional<std::string> uncorrected_test_set(const std::string& test_set) {
  const auto plus = test_set.rfind('+');
  if (plus == std::string::npos || plus == 0) return std::nullopt;
  const std::string method = test_set.substr(plus + 1);
  if (!attribution::find_fix_method(method) && !attribution::find_citation_baseline(method))
    return std::nullopt;
  return test_set.substr(0, plus);
}

bool is_baseline_test_set(const std::string& test_set) {
  const auto plus = test_set.rfind('+');
  return plus != std::string::npos && plus > 0 &&
         attribution::find_citation_baseline(test_set.substr(plus + 1)).has_value();
}

EvalRecord evaluate_answers(const std::vector<data::Example>& examples,
                            const std::vector<std::string>& answers, const EvalOptions& options) {
  if (answers.size() != examples.size())
    fail_at(options.data_path, "",
            std::to_string(answers.size()) + " answers for " + std::to_string(examples.size()) +
                " examples");
  EvalRecord record;
  record.prompts.assign(examples.size(), "");
  record.generations = answers;
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const data::Example& example = examples[i];
    std::optional<std::string> overlap_with;
    if (options.overlap_reference) {
      auto it = example.references.find(*options.overlap_reference);
      if (it == example.references.end())
        fail_at(options.data_path, "example '" + example.id + "'",
                "no reference answer '" + *options.overlap_reference +
                    "' for the citation overlap (it has: " + reference_names(example) + ")");
      overlap_with = it->second;
    }
    auto values = rewards::named_values(
        rewards::score_answer(example, answers[i], options.metrics, overlap_with));
    record.ids.push_back(example.id);
    if (i == 0)
      for (const auto& [name, value] : values) record.metrics.push_back({name, {}});
    // named_values only varies with the overlap, which is on for every example or none.
    for (std::size_t m = 0; m < values.size(); ++m)
      record.metrics[m].second.push_back(values[m].second);
  }
  for (const auto& [name, column] : record.metrics)
    record.aggregates.push_back(
        {name, rewards::aggregate(column, options.bootstrap_seed, options.bootstrap_resamples)});
  return record;
}

const rewards::Aggregate* find_aggregate(const NamedAggregates& aggregates,
                                         const std::string& name) {
  for (const auto& [key, value] : aggregates)
    if (key == name) return &value;
  return nullptr;
}

std::string reference_names(const data::Example& example) {
  std::string names;
  for (const auto& [name, answer] : example.references) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

nlohmann::ordered_json json_number(double value) {
  if (std::isnan(value)) return nullptr;
  if (std::isfinite(value) && std::abs(value) < 1e15 &&
      value == static_cast<double>(static_cast<long long>(value)))
    return static_cast<long long>(value);
  return value;
}

nlohmann::ordered_json aggregate_json(const rewards::Aggregate& aggregate) {
  return {{"mean", json_number(aggregate.mean)},
          {"count", aggregate.count},
          {"ci_low", json_number(aggregate.ci_low)},
          {"ci_high", json_number(aggregate.ci_high)}};
}

}  // namespace citeforge::trainer
