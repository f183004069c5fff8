#include "trainer/eval/selection.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "common/error.h"
#include "common/file_io.h"
#include "common/join.h"

namespace citeforge::trainer {

namespace {

using json = nlohmann::ordered_json;

// "a, b" or "none".
std::string listed(const std::vector<std::string>& items) {
  return items.empty() ? "none" : join(items, ", ");
}

std::string metric_names(const ResultRecord& record) {
  std::vector<std::string> names;
  for (const auto& [name, a] : record.metrics) names.push_back(name);
  return listed(names);
}

}  // namespace

std::optional<Selection> select_checkpoint(const std::vector<ResultRecord>& results,
                                           const std::string& setting,
                                           const SelectionOptions& options,
                                           const std::string& file) {
  std::vector<std::string> test_sets;  // where the setting was evaluated, for the error message
  const ResultRecord* best = nullptr;
  double best_value = -std::numeric_limits<double>::infinity();
  bool any = false;
  for (const auto& r : results) {
    if (r.stage != setting) continue;
    any = true;
    if (r.test_set != options.validation) {
      if (std::find(test_sets.begin(), test_sets.end(), r.test_set) == test_sets.end())
        test_sets.push_back(r.test_set);
      continue;
    }
    const rewards::Aggregate* a = find_metric(r, options.metric);
    if (!a)
      fail_at(file,
              "setting '" + setting + "', epoch " + std::to_string(r.epoch) + ", test set '" +
                  r.test_set + "'",
              "no metric '" + options.metric + "' (it has: " + metric_names(r) + ")");
    if (std::isnan(a->mean)) continue;  // an empty evaluation cannot win
    // Strictly greater, visiting epochs in order, so ties keep the earliest epoch.
    if (!best || a->mean > best_value || (a->mean == best_value && r.epoch < best->epoch)) {
      best = &r;
      best_value = a->mean;
    }
  }
  if (!any) return std::nullopt;
  if (!best) {
    bool evaluated = false;
    for (const auto& r : results)
      evaluated |= r.stage == setting && r.test_set == options.validation;
    fail_at(file, "setting '" + setting + "'",
            evaluated ? "every evaluation on validation test set '" + options.validation +
                            "' is empty, so no checkpoint can be selected"
                      : "no evaluation on validation test set '" + options.validation +
                            "' (evaluated on: " + listed(test_sets) + ")");
  }
  Selection s;
  s.setting = setting;
  s.epoch = best->epoch;
  s.checkpoint = best->checkpoint;
  s.metric = options.metric;
  s.test_set = options.validation;
  s.value = best_value;
  std::vector<const ResultRecord*> same_epoch;
  for (const auto& r : results)
    if (r.stage == setting && r.epoch == best->epoch) same_epoch.push_back(&r);
  std::sort(same_epoch.begin(), same_epoch.end(),
            [](const ResultRecord* a, const ResultRecord* b) { return a->test_set < b->test_set; });
  for (const ResultRecord* r : same_epoch) s.scores.push_back({r->test_set, r->metrics});
  return s;
}

std::vector<Selection> select_checkpoints(const std::vector<ResultRecord>& results,
                                          const SelectionOptions& options,
                                          const std::string& file) {
  std::vector<Selection> out;
  for (const auto& setting : stage_names())
    if (auto s = select_checkpoint(results, setting, options, file)) out.push_back(std::move(*s));
  return out;
}

void write_selection(const std::string& path, const SelectionOptions& options,
                     const std::vector<Selection>& selections) {
  json selected = json::array();
  for (const auto& s : selections) {
    json scores = json::object();
    for (const auto& [test_set, aggregates] : s.scores)
      scores[test_set] = aggregates_to_json(aggregates);
    selected.push_back({{"setting", s.setting},
                        {"epoch", s.epoch},
                        {"checkpoint", s.checkpoint},
                        {"metric", s.metric},
                        {"test_set", s.test_set},
                        {"value", json_number(s.value)},
                        {"scores", scores}});
  }
  json root = {
      {"metric", options.metric}, {"validation", options.validation}, {"selected", selected}};
  write_file_atomically(path, root.dump(2) + "\n");
}

std::vector<Selection> read_selection(const std::string& path, SelectionOptions* options) {
  json root;
  try {
    root = json::parse(read_file(path));
  } catch (const json::exception& e) {
    fail_at(path, "", std::string("invalid JSON: ") + e.what());
  }
  auto string_field = [&](const json& object, const char* key, const std::string& where) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_string())
      fail_at(path, where, std::string("field '") + key + "': expected a string");
    return it->get<std::string>();
  };
  if (!root.is_object()) fail_at(path, "", "expected an object");
  SelectionOptions read_options{string_field(root, "metric", ""),
                                string_field(root, "validation", "")};
  if (options) *options = read_options;
  auto selected = root.find("selected");
  if (selected == root.end() || !selected->is_array())
    fail_at(path, "", "field 'selected': expected a list");
  std::vector<Selection> out;
  for (std::size_t i = 0; i < selected->size(); ++i) {
    const json& item = (*selected)[i];
    std::string where = "selected[" + std::to_string(i) + "]";
    if (!item.is_object()) fail_at(path, where, "expected an object");
    Selection s;
    s.setting = string_field(item, "setting", where);
    if (!is_stage(s.setting))
      fail_at(path, where,
              "field 'setting': '" + s.setting + "' is not one of base, sft, ppo, sft+ppo");
    auto epoch = item.find("epoch");
    if (epoch == item.end() || !epoch->is_number_integer() || epoch->get<long long>() < 0)
      fail_at(path, where, "field 'epoch': expected a non-negative integer");
    s.epoch = epoch->get<int>();
    s.checkpoint = string_field(item, "checkpoint", where);
    s.metric = string_field(item, "metric", where);
    s.test_set = string_field(item, "test_set", where);
    auto value = item.find("value");
    if (value == item.end() || !(value->is_number() || value->is_null()))
      fail_at(path, where, "field 'value': expected a number");
    s.value = value->is_null() ? std::numeric_limits<double>::quiet_NaN() : value->get<double>();
    auto scores = item.find("scores");
    if (scores == item.end() || !scores->is_object())
      fail_at(path, where, "field 'scores': expected an object");
    for (const auto& [test_set, aggregates] : scores->items())
      s.scores.push_back(
          {test_set, aggregates_from_json(aggregates, path, where, "scores." + test_set)});
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace citeforge::trainer
