// `citeforge judge-attributability`: the evidence-QA paper's answer attributability of answers
// (attribution/attributability.h), judged by a model asked whether each cited source supports
// its sentence. The judge's threshold is given (--threshold) or chosen on labelled pairs made
// from trusted reference answers (--calibrate, attribution/judge_calibration.h): on the pairs of
// every other example, and reported on the rest, so the judge's own accuracy is known. Next to
// the answers' score stands its chance level: the same sentences citing as many sources drawn
// at random from their question's. The experiment is attribution/attributability_experiment.h;
// this file reads the options, prints and writes.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "attribution/attributability_experiment.h"
#include "attribution/yes_no_judge.h"
#include "common/error.h"
#include "common/file_io.h"
#include "data/example.h"
#include "models/linear.h"
#include "rewards/aggregate.h"
#include "trainer/cli/answers_input.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/cli_model.h"
#include "trainer/cli/commands.h"
#include "trainer/eval/eval_record.h"
#include "trainer/eval/paired.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {
const CliCommand& judge_attributability_cli() {
  static const CliCommand command = [] {
    CliCommand c{"judge-attributability",
                 "the share of answer sentences their cited sources support, a model judging", "",
                 "Give --answers or --reference, --model and --chat, and --threshold T or\n"
                 "--calibrate LABELLED.jsonl with --calibrate-reference NAME.",
                 answer_options()};
    for (auto& o : model_options()) c.options.push_back(o);
    const std::vector<CliOption> own{
        {"judge-template", "NAME|FILE", "the yes/no question to the judge", "attributable"},
        {"templates", "DIR", "where templates are looked up by name", "configs/templates"},
        {"threshold", "T", "the judge's threshold on its yes/no log-odds"},
        {"calibrate", "LABELLED.jsonl", "choose the threshold on labelled pairs from this file"},
        {"calibrate-reference", "NAME", "the reference answers whose citations are trusted"},
        {"limit", "N", "judge the first N answers (default: all)"},
        {"out", "DIR", "write summary.json and per-answer scores here"},
        {"seed", "S", "the seed of the chance reference and the calibration pairs", "0"}};
    c.options.insert(c.options.end(), own.begin(), own.end());
    return c;
  }();
  return command;
}

namespace {

nlohmann::ordered_json quality_json(const attribution::ThresholdQuality& q) {
  return {{"supported_pairs", q.supported},
          {"unsupported_pairs", q.unsupported},
          {"balanced_accuracy", q.balanced_accuracy},
          {"accuracy", q.accuracy},
          {"auc", q.auc}};
}

// A Progress bar for one of the experiment's loops, started at its first report.
attribution::ProgressFn progress_bar(std::optional<Progress>& bar, const std::string& label,
                                     const std::string& unit) {
  return [&bar, label, unit](std::size_t done, std::size_t total) {
    if (!bar) bar.emplace(label, int64_t(total));
    bar->update(int64_t(done), unit);
  };
}

// The judge's threshold from labelled pairs: chosen on the pairs of the even-numbered examples,
// measured on the odd-numbered ones.
nlohmann::ordered_json calibrate(attribution::YesNoJudge& judge, const std::string& path,
                                 const std::string& reference, uint64_t seed, double* threshold) {
  const auto examples = data::read_examples_jsonl(path);
  std::optional<Progress> bar;
  const auto calibration = attribution::calibrate_judge(
      attribution::yes_no_support_judge(judge), examples, path, reference, seed,
      progress_bar(bar, "calibrate the judge", "pairs"));
  if (bar) bar->finish(std::to_string(calibration.pairs) + " pairs");
  const auto& chosen = calibration.chosen;
  const auto& held_out = calibration.held_out;
  *threshold = chosen.threshold;
  std::printf(
      "judge calibrated on %s (%s's citations): threshold %.3f; balanced accuracy %.3f on the "
      "%zu pairs it was chosen on, %.3f on %zu held-out pairs (AUC %.3f; chance 0.5)\n",
      path.c_str(), reference.c_str(), chosen.threshold, chosen.balanced_accuracy,
      chosen.supported + chosen.unsupported, held_out.balanced_accuracy,
      held_out.supported + held_out.unsupported, held_out.auc);
  return {{"data", path},
          {"reference", reference},
          {"seed", seed},
          {"threshold", chosen.threshold},
          {"unread_pairs", calibration.unread},
          {"chosen_on", quality_json(chosen)},
          {"held_out", quality_json(held_out)}};
}

}  // namespace

int command_judge_attributability(const Args& args) {
  CliArgs cli = parse_cli(judge_attributability_cli(), args);
  cli.no_positional();
  if (cli.has("answers") == cli.has("reference"))
    throw Error("judge-attributability: give exactly one of --answers FILE or --reference NAME");
  if (cli.has("threshold") == cli.has("calibrate"))
    throw Error(
        "judge-attributability: give exactly one of --threshold T or --calibrate LABELLED.jsonl");
  if (cli.has("calibrate") && !cli.has("calibrate-reference"))
    throw Error(
        "judge-attributability: --calibrate needs --calibrate-reference NAME, the "
        "reference answers whose citations are trusted");
  for (const char* option : {"model", "chat"})
    if (!cli.has(option))
      throw Error(std::string("judge-attributability: --") + option + " is required");
  const std::string data_path = cli.require("data");
  auto examples = data::read_examples_jsonl(data_path);
  const auto answers = answers_for(examples, data_path, cli);
  const uint64_t seed = uint64_t(cli.integer("seed"));

  auto loaded = load_cli_model(cli, "judge-attributability", [](const std::string& line) {
    std::fprintf(stderr, "[judge-attributability] %s\n", line.c_str());
  });
  const models::DequantizedWeights once;
  attribution::YesNoJudge judge = cli_judge(cli, loaded);
  nlohmann::ordered_json summary;
  summary["data"] = data_path;
  double threshold = cli.has("threshold") ? cli.number("threshold") : 0.0;
  if (cli.has("calibrate"))
    summary["calibration"] = calibrate(judge, cli.require("calibrate"),
                                       cli.require("calibrate-reference"), seed, &threshold);
  summary["threshold"] = threshold;

  const std::size_t limit = std::min<std::size_t>(
      examples.size(),
      std::size_t(cli.has("limit") ? cli.integer("limit") : long(examples.size())));
  std::optional<Progress> bar;
  const auto judged = attribution::judge_answers(
      examples, answers, attribution::yes_no_support_judge(judge), threshold, seed, limit,
      progress_bar(bar, "judge attributability", "answers"));
  if (bar) bar->finish(std::to_string(limit) + " answers");
  std::string per_answer;
  for (const auto& answer : judged.answers) {
    nlohmann::ordered_json line{{"id", answer.id}};
    const auto& a = answer.judged;
    if (a.score) {
      line["attributability"] = *a.score;
      line["chance"] = *answer.chance;
      line["sentences"] = a.sentences;
      line["entailed"] = a.entailed;
      line["unformatted"] = a.unformatted;
      line["unread"] = a.unread;
    } else {
      line["attributability"] = nullptr;
    }
    per_answer += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  summary["answers"] = limit;
  summary["answers_without_citation"] = judged.without_citation;
  const auto score_aggregate = rewards::aggregate(judged.scores),
             chance_aggregate = rewards::aggregate(judged.chance);
  summary["attributability"] = aggregate_json(score_aggregate);
  summary["chance_attributability"] = aggregate_json(chance_aggregate);
  // The same sentences against their chance sources, answer by answer: what says whether the
  // judge's score is above chance (the intervals above overlap more often than this test fails).
  const PairedComparison vs_chance{"chance", "attributability",
                                   rewards::paired_test(judged.scores, judged.chance)};
  summary["paired"] = paired_to_json({vs_chance});
  summary["sentences"] = judged.sentences;
  summary["entailed"] = judged.entailed;
  summary["unformatted"] = judged.unformatted;
  summary["unread"] = judged.unread;
  std::printf(
      "attributability %.3f (chance %.3f; paired difference %+.3f [%+.3f, %+.3f], p = %.3g) over "
      "%zu answers with a citation (%d without one); "
      "%d of %d sentences entailed, %d without a well-formed citation, %d too long to judge; "
      "threshold %.3f\n",
      score_aggregate.mean, chance_aggregate.mean, vs_chance.test.difference, vs_chance.test.ci_low,
      vs_chance.test.ci_high, vs_chance.test.p_value, judged.scores.size(), judged.without_citation,
      judged.entailed, judged.sentences, judged.unformatted, judged.unread, threshold);
  if (auto out = cli.get("out")) {
    std::filesystem::create_directories(*out);
    write_file_atomically((std::filesystem::path(*out) / "attributability.jsonl").string(),
                          per_answer);
    write_file_atomically((std::filesystem::path(*out) / "summary.json").string(),
                          summary.dump(2) + "\n");
    std::printf("wrote %s/summary.json\n", out->c_str());
  }
  return 0;
}

}  // namespace citeforge::trainer
