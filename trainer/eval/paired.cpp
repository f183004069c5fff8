#include "trainer/eval/paired.h"

#include <limits>
#include <map>
#include <set>

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

std::vector<PairedComparison> paired_from_json(const json& object, const std::string& file,
                                               const std::string& where, const std::string& field) {
  auto fail = [&](const std::string& path, const std::string& what) {
    fail_at(file, where, "field '" + path + "': " + what);
  };
  auto number = [&](const json& value, const std::string& key, const std::string& path) {
    auto it = value.find(key);
    if (it == value.end()) fail(path + "." + key, "missing");
    if (it->is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!it->is_number()) fail(path + "." + key, "expected a number or null");
    return it->get<double>();
  };
  if (!object.is_object()) fail(field, "expected an object");
  const std::set<std::string> known(comparison_names().begin(), comparison_names().end());
  std::vector<PairedComparison> out;
  for (const auto& [against, metrics] : object.items()) {
    const std::string path = field + "." + against;
    if (!known.count(against)) fail(path, "unknown comparison (chance, base, uncorrected)");
    if (!metrics.is_object()) fail(path, "expected an object");
    for (const auto& [metric, value] : metrics.items()) {
      const std::string at = path + "." + metric;
      if (!value.is_object()) fail(at, "expected an object");
      for (const auto& [key, unused] : value.items())
        if (key != "difference" && key != "count" && key != "ci_low" && key != "ci_high" &&
            key != "p")
          fail(at + "." + key, "unknown field");
      PairedComparison c{against, metric, {}};
      c.test.difference = number(value, "difference", at);
      c.test.ci_low = number(value, "ci_low", at);
      c.test.ci_high = number(value, "ci_high", at);
      c.test.p_value = number(value, "p", at);
      auto count = value.find("count");
      if (count == value.end()) fail(at + ".count", "missing");
      if (!count->is_number_integer() || count->get<long long>() < 0)
        fail(at + ".count", "expected a non-negative integer");
      c.test.count = count->get<std::size_t>();
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace citeforge::trainer
