#include "trainer/eval/paired.h"

#include <map>

#include "common/error.h"

namespace citeforge::trainer {

namespace {

using json = nlohmann::ordered_json;

const std::string kChancePrefix = "chance_";

const std::vector<double>* column(const EvalRecord& record, const std::string& name) {
  for (const auto& [key, values] : record.metrics)
    if (key == name) return &values;
  return nullptr;
}

// `metric` of `record` and of `other`, paired by example id in `record`'s order.
std::pair<std::vector<double>, std::vector<double>> pair_by_id(const EvalRecord& record,
                                                               const EvalRecord& other,
                                                               const std::string& metric) {
  std::pair<std::vector<double>, std::vector<double>> out;
  const auto* mine = column(record, metric);
  const auto* theirs = column(other, metric);
  if (!mine || !theirs) return out;
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < other.ids.size(); ++i) index.emplace(other.ids[i], i);
  for (std::size_t i = 0; i < record.ids.size(); ++i) {
    auto it = index.find(record.ids[i]);
    if (it == index.end()) continue;
    out.first.push_back((*mine)[i]);
    out.second.push_back((*theirs)[it->second]);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& comparison_names() {
  static const std::vector<std::string> names = {"chance", "base", "uncorrected"};
  return names;
}

std::vector<PairedComparison> paired_comparisons(const EvalRecord& record, const EvalRecord* base,
                                                 const EvalRecord* uncorrected, std::uint64_t seed,
                                                 int resamples) {
  std::vector<std::string> metrics;
  for (const auto& [name, values] : record.metrics)
    if (column(record, kChancePrefix + name)) metrics.push_back(name);
  std::vector<PairedComparison> out;
  for (const auto& metric : metrics)
    out.push_back({"chance", metric,
                   rewards::paired_test(*column(record, metric),
                                        *column(record, kChancePrefix + metric), seed, resamples)});
  for (const auto& [against, other] : {std::pair{"base", base}, {"uncorrected", uncorrected}}) {
    if (!other) continue;
    for (const auto& metric : metrics) {
      auto [a, b] = pair_by_id(record, *other, metric);
      if (!a.empty()) out.push_back({against, metric, rewards::paired_test(a, b, seed, resamples)});
    }
  }
  return out;
}

const PairedComparison* find_comparison(const std::vector<PairedComparison>& comparisons,
                                        const std::string& against, const std::string& metric) {
  for (const auto& c : comparisons)
    if (c.against == against && c.metric == metric) return &c;
  return nullptr;
}

json paired_to_json(const std::vector<PairedComparison>& comparisons) {
  json out = json::object();
  for (const auto& against : comparison_names())
    for (const auto& c : comparisons)
      if (c.against == against)
        out[against][c.metric] = {{"difference", json_number(c.test.difference)},
                                  {"count", c.test.count},
                                  {"ci_low", json_number(c.test.ci_low)},
                                  {"ci_high", json_number(c.test.ci_high)},
                                  {"p", json_number(c.test.p_value)}};
  return out;
}

}  // namespace citeforge::trainer
