// citeforge paired A.jsonl:FIELD B.jsonl:FIELD: the paired test of two per-question scores
// (rewards::paired_test, the one every table uses): the mean difference A - B over the questions
// both files score (paired by id), its paired bootstrap 95% interval and the sign-flip p-value.
// For records whose per-question files outlive the runs that made them: a judge's scores against
// their chance column, two answer sets' per_example.jsonl from `citeforge score`.
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "common/file_io.h"
#include "data/jsonl.h"
#include "rewards/aggregate.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"

namespace citeforge::trainer {

const CliCommand& paired_cli() {
  static const CliCommand command{
      "paired",
      "the paired test of two per-question score columns (JSONL files, paired by id)",
      "A.jsonl:FIELD B.jsonl:FIELD",
      "Prints {pairs, difference, ci_low, ci_high, p} for A - B: a null or missing score leaves\n"
      "its question out, and questions only one file has are counted, not paired.",
      {{"id", "FIELD", "the field that names a question", "id"},
       {"resamples", "N", "bootstrap resamples of the interval",
        std::to_string(rewards::kDefaultBootstrapResamples)},
       {"seed", "S", "the bootstrap's and sign-flip draws' seed",
        std::to_string(rewards::kDefaultBootstrapSeed)}}};
  return command;
}

namespace {

struct Column {
  std::string file, field;
  std::vector<std::string> ids;
  std::map<std::string, double> values;
};

Column read_column(const std::string& spec, const std::string& id_field) {
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size())
    throw Error("paired: expected FILE.jsonl:FIELD, got '" + spec + "'");
  Column c{spec.substr(0, colon), spec.substr(colon + 1), {}, {}};
  data::for_each_jsonl_line(c.file, read_file(c.file), [&](std::size_t n, nlohmann::json& record) {
    const std::string where = "line " + std::to_string(n);
    if (!record.is_object()) fail_at(c.file, where, "not a JSON object");
    if (!record.contains(id_field) || !record[id_field].is_string())
      fail_at(c.file, where + ", field '" + id_field + "'", "missing or not a string");
    const std::string id = record[id_field].get<std::string>();
    if (c.values.count(id)) fail_at(c.file, where, "id '" + id + "' appears twice");
    double value = std::numeric_limits<double>::quiet_NaN();
    if (record.contains(c.field) && !record[c.field].is_null()) {
      if (!record[c.field].is_number())
        fail_at(c.file, where + ", field '" + c.field + "'", "not a number");
      value = record[c.field].get<double>();
    }
    c.ids.push_back(id);
    c.values[id] = value;
  });
  return c;
}

}  // namespace

int command_paired(const Args& raw) {
  auto args = parse_cli(paired_cli(), raw);
  if (args.positional.size() != 2)
    throw Error("paired: give A.jsonl:FIELD B.jsonl:FIELD (citeforge paired --help)");
  const std::string id_field = args.require("id");
  const Column a = read_column(args.positional[0], id_field);
  const Column b = read_column(args.positional[1], id_field);
  std::vector<double> x, y;
  int only_a = 0;
  for (const auto& id : a.ids) {
    const auto it = b.values.find(id);
    if (it == b.values.end()) {
      ++only_a;
      continue;
    }
    x.push_back(a.values.at(id));
    y.push_back(it->second);
  }
  const int only_b = int(b.ids.size()) - int(x.size());
  const long resamples = args.integer("resamples"), seed = args.integer("seed");
  if (resamples < 1) throw Error("paired: --resamples must be >= 1");
  const auto test = rewards::paired_test(x, y, std::uint64_t(seed), int(resamples));
  auto number = [](double v) {
    return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  const nlohmann::ordered_json out{
      {"a", args.positional[0]},       {"b", args.positional[1]},
      {"pairs", test.count},           {"only_in_a", only_a},
      {"only_in_b", only_b},           {"difference", number(test.difference)},
      {"ci_low", number(test.ci_low)}, {"ci_high", number(test.ci_high)},
      {"p", number(test.p_value)}};
  std::printf("%s\n", out.dump(2).c_str());
  std::fprintf(stderr, "[paired] %s - %s: %+.4f [%+.4f, %+.4f], p = %.3g over %zu pairs\n",
               args.positional[0].c_str(), args.positional[1].c_str(), test.difference, test.ci_low,
               test.ci_high, test.p_value, test.count);
  return 0;
}

}  // namespace citeforge::trainer
