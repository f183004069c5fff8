// citeforge holm P [P ...]: Holm's step-down adjustment of one family of p-values
// (rewards::holm_adjusted, the rule every table adjusts its paired tests by), for scripts that
// gather a family's p-values from several files (experiments/demo/compare_settings.sh).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "rewards/aggregate.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"

namespace citeforge::trainer {

const CliCommand& holm_cli() {
  static const CliCommand command{
      "holm",
      "Holm's adjustment of one family of p-values",
      "P [P ...]",
      "Prints {p, p_holm}: the p-values as given and adjusted over all of them, in the same\n"
      "order: the k-th smallest of n times (n - k + 1), kept from falling below the one before,\n"
      "capped at 1. A nan is not part of the family and stays nan (null).",
      {}};
  return command;
}

int command_holm(const Args& raw) {
  auto args = parse_cli(holm_cli(), raw);
  if (args.positional.empty())
    throw Error("holm: give one or more p-values (citeforge holm --help)");
  std::vector<double> p;
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    const std::string& text = args.positional[i];
    const auto value = parse_number(text);
    // "nan" (a test with nothing to compare) stays out of the family, as in the tables.
    if (!value || !(std::isnan(*value) || (*value >= 0.0 && *value <= 1.0)))
      throw Error("holm: p-value " + std::to_string(i + 1) + " ('" + text +
                  "') is not a number in [0, 1] or nan");
    p.push_back(*value);
  }
  const nlohmann::ordered_json out{{"p", p}, {"p_holm", rewards::holm_adjusted(p)}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace citeforge::trainer
