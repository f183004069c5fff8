// `citeforge judge-attributability`: the evidence-QA paper's answer attributability of answers
// (attribution/attributability.h), judged by a model asked whether each cited source supports
// its sentence. The judge's threshold is given (--threshold) or chosen on labelled pairs made
// from trusted reference answers (--calibrate, attribution/judge_calibration.h): on the pairs of
// every other example, and reported on the rest, so the judge's own accuracy is known. Next to
// the answers' score stands its chance level: the same sentences citing as many sources drawn
// at random from their question's.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "attribution/attributability.h"
#include "attribution/judge_calibration.h"
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

// The judge's threshold from labelled pairs: chosen on the pairs of the even-numbered examples,
// measured on the odd-numbered ones.
nlohmann::ordered_json calibrate(attribution::YesNoJudge& judge, const std::string& path,
                                 const std::string& reference, uint64_t seed, double* threshold) {
  const auto examples = data::read_examples_jsonl(path);
  const auto pairs = attribution::support_pairs(examples, reference, seed);
  if (pairs.empty())
    fail_at(path, "",
            "no cited sentence in any reference answer '" + reference + "' to calibrate on");
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < examples.size(); ++i) position[examples[i].id] = i;
  const auto support = attribution::yes_no_support_judge(judge);
  std::vector<double> fit_scores, check_scores;
  std::vector<bool> fit_labels, check_labels;
  int unread = 0;
  Progress progress("calibrate the judge", int64_t(pairs.size()));
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto score = support(pairs[i].sentence, pairs[i].cited);
    progress.update(int64_t(i + 1), "pairs");
    if (!score) {
      ++unread;
      continue;
    }
    const bool fit = position[pairs[i].example_id] % 2 == 0;
    (fit ? fit_scores : check_scores).push_back(*score);
    (fit ? fit_labels : check_labels).push_back(pairs[i].supported);
  }
  progress.finish(std::to_string(pairs.size()) + " pairs");
  const auto chosen = attribution::choose_threshold(fit_scores, fit_labels);
  const auto held_out =
      attribution::threshold_quality(check_scores, check_labels, chosen.threshold);
  *threshold = chosen.threshold;
  auto quality = [](const attribution::ThresholdQuality& q) {
    return nlohmann::ordered_json{{"supported_pairs", q.supported},
                                  {"unsupported_pairs", q.unsupported},
                                  {"balanced_accuracy", q.balanced_accuracy},
                                  {"accuracy", q.accuracy},
                                  {"auc", q.auc}};
  };
  std::printf(
      "judge calibrated on %s (%s's citations): threshold %.3f; balanced accuracy %.3f on the "
      "%zu pairs it was chosen on, %.3f on %zu held-out pairs (AUC %.3f; chance 0.5)\n",
      path.c_str(), reference.c_str(), chosen.threshold, chosen.balanced_accuracy,
      fit_scores.size(), held_out.balanced_accuracy, check_scores.size(), held_out.auc);
  return {{"data", path},
          {"reference", reference},
          {"seed", seed},
          {"threshold", chosen.threshold},
          {"unread_pairs", unread},
          {"chosen_on", quality(chosen)},
          {"held_out", quality(held_out)}};
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

  const auto support = attribution::yes_no_support_judge(judge);
  std::mt19937_64 rng(seed);
  const std::size_t limit = std::min<std::size_t>(
      examples.size(),
      std::size_t(cli.has("limit") ? cli.integer("limit") : long(examples.size())));
  std::vector<double> scores, chance;
  int sentences = 0, entailed = 0, unformatted = 0, unread = 0, without_citation = 0;
  std::string per_answer;
  Progress progress("judge attributability", int64_t(limit));
  for (std::size_t i = 0; i < limit; ++i) {
    const auto& e = examples[i];
    const auto judged =
        attribution::attributability_with_chance(e, answers[i], support, threshold, rng);
    const auto& a = judged.judged;
    nlohmann::ordered_json line{{"id", e.id}};
    if (a.score) {
      scores.push_back(*a.score);
      chance.push_back(*judged.chance);
      sentences += a.sentences;
      entailed += a.entailed;
      unformatted += a.unformatted;
      unread += a.unread;
      line["attributability"] = *a.score;
      line["chance"] = *judged.chance;
      line["sentences"] = a.sentences;
      line["entailed"] = a.entailed;
      line["unformatted"] = a.unformatted;
      line["unread"] = a.unread;
    } else {
      ++without_citation;
      line["attributability"] = nullptr;
    }
    per_answer += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    progress.update(int64_t(i + 1), "answers");
  }
  progress.finish(std::to_string(limit) + " answers");
  summary["answers"] = limit;
  summary["answers_without_citation"] = without_citation;
  const auto score_aggregate = rewards::aggregate(scores),
             chance_aggregate = rewards::aggregate(chance);
  summary["attributability"] = aggregate_json(score_aggregate);
  summary["chance_attributability"] = aggregate_json(chance_aggregate);
  summary["sentences"] = sentences;
  summary["entailed"] = entailed;
  summary["unformatted"] = unformatted;
  summary["unread"] = unread;
  std::printf(
      "attributability %.3f (chance %.3f) over %zu answers with a citation (%d without one); "
      "%d of %d sentences entailed, %d without a well-formed citation, %d too long to judge; "
      "threshold %.3f\n",
      score_aggregate.mean, chance_aggregate.mean, scores.size(), without_citation, entailed,
      sentences, unformatted, unread, threshold);
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
