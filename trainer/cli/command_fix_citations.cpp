// `citeforge fix-citations`: corrects the citations of answers after generation (CiteFix,
// attribution/citefix.h) and writes the corrected answers in the --answers format, so that
// `score --answers` reads them back and the two can be compared.
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "attribution/citefix.h"
#include "common/clock.h"
#include "common/error.h"
#include "data/answers.h"
#include "data/example.h"
#include "trainer/cli/answers_input.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"

namespace citeforge::trainer {

namespace {
constexpr const char* kUsage =
    "usage: citeforge fix-citations --data FILE.jsonl (--reference NAME | --answers "
    "ANSWERS.jsonl) --out FIXED.jsonl [--method keyword|keyword_bm25] [--bm25-weight W]";
}  // namespace

int command_fix_citations(const Args& args) {
  CliArgs cli = parse_cli("fix-citations", args,
                          {"data", "answers", "reference", "out", "method", "bm25-weight"}, {});
  if (!cli.positional.empty())
    throw Error("fix-citations: unexpected argument '" + cli.positional.front() + "'; " + kUsage);
  if (cli.has("answers") == cli.has("reference"))
    throw Error(
        std::string("fix-citations: give exactly one of --answers FILE or --reference NAME; ") +
        kUsage);
  const std::string data_path = cli.require("data");
  const std::string out_path = cli.require("out");
  attribution::FixOptions options;
  try {
    options.method = attribution::parse_fix_method(cli.get_or("method", "keyword"));
  } catch (const Error& e) {
    throw Error(std::string("fix-citations: --method: ") + e.what());
  }
  options.bm25_weight = cli.number("bm25-weight", options.bm25_weight);
  if (!(options.bm25_weight >= 0)) throw Error("fix-citations: --bm25-weight must be >= 0");

  const auto examples = data::read_examples_jsonl(data_path);
  if (examples.empty()) fail_at(data_path, "", "no examples");
  const auto answers = answers_for(examples, data_path, cli);
  std::map<std::string, std::string> fixed;
  int points = 0, changed = 0, answers_changed = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < examples.size(); ++i) {
    auto result = attribution::fix_citations(examples[i], answers[i], options);
    points += result.points;
    changed += result.changed;
    answers_changed += result.answer != answers[i] ? 1 : 0;
    fixed[examples[i].id] = std::move(result.answer);
  }
  const double seconds = seconds_since(start);
  data::write_answers_jsonl(out_path, fixed);
  std::printf(
      "fix-citations (%s): %zu answers, %d cited points, %d re-cited; %d answers changed; "
      "%.3f ms per answer; wrote %s\n",
      attribution::to_string(options.method), examples.size(), points, changed, answers_changed,
      1000.0 * seconds / double(examples.size()), out_path.c_str());
  return 0;
}

}  // namespace citeforge::trainer
