// `citeforge data ...`: make, import, inspect and render example files (docs/design.md §6).
//   data import synsciqa --input FILE.csv|FILE.json [--golden FILE.csv] [--strict]
//                        --out examples.jsonl
//     (a record that cannot be used is skipped with a warning naming its line; --strict refuses
//     the file instead)
//   data import rage --corpus F --queries F --relevant F [--irrelevant F]
//                    [--seemingly-relevant F] [--seed N] --out examples.jsonl
//   data import jsonl --input F --out F
//   data synth [--seed S] --out DIR [--config FILE.yaml]
//   data stats FILE.jsonl [--json]
//   data render FILE.jsonl [--template NAME|FILE] [--templates DIR] [--id ID] [--limit N]
#include <cstdio>
#include <iostream>

#include "common/error.h"
#include "data/example.h"
#include "data/example_stats.h"
#include "data/prompt_template.h"
#include "data/rage_import.h"
#include "data/synsciqa.h"
#include "data/synth.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"

namespace citeforge::trainer {

namespace {

const char* kUsage =
    "usage: citeforge data import synsciqa --input FILE.csv|FILE.json [--golden FILE.csv] "
    "[--strict] --out F\n"
    "       citeforge data import rage --corpus F --queries F --relevant F [--irrelevant F]\n"
    "                 [--seemingly-relevant F] [--seed N] [--min-relevant N] [--max-relevant N]\n"
    "                 [--num-irrelevant K] [--num-seemingly-relevant K] [--mine K]\n"
    "                 [--origin NAME] [--split NAME] --out F\n"
    "       citeforge data import jsonl --input F --out F\n"
    "       citeforge data synth [--seed S] --out DIR [--config FILE.yaml]\n"
    "       citeforge data stats FILE.jsonl [--json]\n"
    "       citeforge data render FILE.jsonl [--template NAME|FILE] [--templates DIR] [--id ID] "
    "[--limit N]\n";

Args rest_after(const Args& args, std::size_t n) {
  return Args(args.begin() + n, args.end());
}

std::string single_positional(const CliArgs& cli, const std::string& command) {
  if (cli.positional.size() != 1)
    throw Error(command + ": expected one example file (JSONL), got " +
                std::to_string(cli.positional.size()) + " arguments");
  return cli.positional[0];
}

void no_positional(const CliArgs& cli, const std::string& command) {
  if (!cli.positional.empty())
    throw Error(command + ": unexpected argument '" + cli.positional[0] + "'");
}

int to_count(long value, const std::string& option) {
  if (value < 0 || value > 1000000) throw Error("--" + option + ": must be in [0, 1000000]");
  return static_cast<int>(value);
}

int import_synsciqa_command(const Args& args) {
  const std::string command = "data import synsciqa";
  CliArgs cli = parse_cli(command, args, {"input", "golden", "out"}, {"strict"});
  no_positional(cli, command);
  data::SynsciqaReport report;
  auto examples =
      data::import_synsciqa(cli.require("input"), cli.get("golden"), &report, cli.has("strict"));
  data::write_examples_jsonl(cli.require("out"), examples);
  for (const std::string& skipped : report.skipped)
    std::fprintf(stderr, "warning: %s\n", skipped.c_str());
  for (const std::string& problem : report.problems)
    std::fprintf(stderr, "warning: %s\n", problem.c_str());
  const std::string labels = cli.get("golden")
                                 ? std::string("gold")
                                 : "silver, from the '" + report.silver_from + "' answers";
  std::printf(
      "wrote %zu examples to %s (%zu rows read, %zu skipped, %zu without a relevant source, "
      "labels %s)\n",
      examples.size(), cli.require("out").c_str(), report.rows, report.skipped.size(),
      report.no_relevant, labels.c_str());
  return 0;
}

int import_rage_command(const Args& args) {
  const std::string command = "data import rage";
  CliArgs cli = parse_cli(command, args,
                          {"corpus", "queries", "relevant", "irrelevant", "seemingly-relevant",
                           "seed", "min-relevant", "max-relevant", "num-irrelevant",
                           "num-seemingly-relevant", "mine", "origin", "split", "out"},
                          {});
  no_positional(cli, command);
  data::RageFiles files;
  files.corpus = cli.require("corpus");
  files.queries = cli.require("queries");
  files.relevant = cli.require("relevant");
  files.irrelevant = cli.get("irrelevant");
  files.seemingly_relevant = cli.get("seemingly-relevant");
  const std::string out = cli.require("out");
  data::RageImportOptions options;
  const long seed = cli.integer("seed", 1);
  if (seed < 0) throw Error("--seed: must be >= 0");
  options.mixture.seed = static_cast<std::uint64_t>(seed);
  options.mixture.min_relevant = to_count(cli.integer("min-relevant", 1), "min-relevant");
  options.mixture.max_relevant = to_count(cli.integer("max-relevant", 3), "max-relevant");
  options.mixture.irrelevant = to_count(cli.integer("num-irrelevant", 3), "num-irrelevant");
  options.mixture.seemingly_relevant =
      to_count(cli.integer("num-seemingly-relevant", 3), "num-seemingly-relevant");
  options.mined_seemingly_relevant = to_count(cli.integer("mine", 10), "mine");
  options.origin = cli.get_or("origin", "rage");
  options.split = cli.get_or("split", "test");
  data::RageReport report;
  auto examples = data::import_rage(files, options, &report);
  data::write_examples_jsonl(out, examples);
  std::printf(
      "wrote %zu examples to %s (%zu documents, %zu queries, %zu without a relevant document "
      "skipped, %zu qrels rows with score <= 0 ignored; seemingly relevant %s, irrelevant %s)\n",
      report.examples, out.c_str(), report.documents, report.queries,
      report.queries_without_relevant, report.non_positive_scores,
      report.mined_seemingly_relevant ? "mined with BM25" : "from file",
      report.sampled_irrelevant ? "sampled from the corpus" : "from file");
  return 0;
}

int import_jsonl_command(const Args& args) {
  const std::string command = "data import jsonl";
  CliArgs cli = parse_cli(command, args, {"input", "out"}, {});
  no_positional(cli, command);
  // Reading validates every field (types, labels, duplicate ids and keys); writing puts the
  // fields in canonical order with defaults filled in.
  auto examples = data::read_examples_jsonl(cli.require("input"));
  data::write_examples_jsonl(cli.require("out"), examples);
  std::printf("wrote %zu examples to %s\n", examples.size(), cli.require("out").c_str());
  return 0;
}

int import_command(const Args& args) {
  if (args.empty())
    throw Error("data import: expected a format (synsciqa, rage, jsonl)\n" + std::string(kUsage));
  const std::string& format = args[0];
  if (format == "synsciqa") return import_synsciqa_command(rest_after(args, 1));
  if (format == "rage") return import_rage_command(rest_after(args, 1));
  if (format == "jsonl") return import_jsonl_command(rest_after(args, 1));
  throw Error("data import: unknown format '" + format + "' (synsciqa, rage, jsonl)");
}

int synth_command(const Args& args) {
  const std::string command = "data synth";
  CliArgs cli = parse_cli(command, args, {"seed", "out", "config"}, {});
  no_positional(cli, command);
  data::SynthConfig config;
  if (auto path = cli.get("config")) config = data::load_synth_config(*path);
  if (cli.has("seed")) {
    const long seed = cli.integer("seed", 1);
    if (seed < 0) throw Error("--seed: must be >= 0");
    config.seed = static_cast<std::uint64_t>(seed);
  }
  const std::string out = cli.require("out");
  data::SynthDataset dataset = data::generate_synth(config);
  data::write_synth(dataset, out);
  std::printf("wrote the synthetic world (seed %llu) to %s:",
              static_cast<unsigned long long>(dataset.config.seed), out.c_str());
  for (const auto& split : dataset.splits)
    std::printf(" %s.jsonl %zu", split.name.c_str(), split.examples.size());
  std::printf("; teacher keeps a relevant citation with p=%.3f, adds a wrong one with p=%.3f\n",
              dataset.teacher_keep, dataset.teacher_add);
  return 0;
}

int stats_command(const Args& args) {
  const std::string command = "data stats";
  CliArgs cli = parse_cli(command, args, {}, {"json"});
  const std::string path = single_positional(cli, command);
  data::ExampleStats stats = data::compute_example_stats(data::read_examples_jsonl(path));
  if (cli.has("json")) {
    std::cout << data::example_stats_json(stats);
  } else {
    std::cout << path << "\n" << data::format_example_stats(stats);
  }
  return 0;
}

int render_command(const Args& args) {
  const std::string command = "data render";
  CliArgs cli = parse_cli(command, args, {"template", "templates", "id", "limit"}, {});
  const std::string path = single_positional(cli, command);
  const data::PromptTemplate tmpl = data::find_prompt_template(
      cli.get_or("template", "rage_numeric"), cli.get_or("templates", "configs/templates"));
  const long limit = cli.integer("limit", 1);
  if (limit < 0) throw Error("--limit: must be >= 0");
  const auto id = cli.get("id");
  long shown = 0;
  for (const data::Example& e : data::read_examples_jsonl(path)) {
    if (id ? e.id != *id : shown >= limit) continue;
    if (shown++) std::cout << "\n";
    std::cout << "### " << e.id << "\n" << data::render_prompt(tmpl, e) << "\n";
    for (const auto& [name, answer] : e.references)
      std::cout << "--- reference '" << name << "': " << answer << "\n";
  }
  if (id && shown == 0) throw Error(path + ": no example with id '" + *id + "'");
  return 0;
}

}  // namespace

int command_data(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string& sub = args[0];
  if (sub == "import") return import_command(rest_after(args, 1));
  if (sub == "synth") return synth_command(rest_after(args, 1));
  if (sub == "stats") return stats_command(rest_after(args, 1));
  if (sub == "render") return render_command(rest_after(args, 1));
  throw Error("data: unknown subcommand '" + sub + "' (import, synth, stats, render)");
}

}  // namespace citeforge::trainer
