// `citeforge data ...`: make, import, inspect and render example files (docs/design.md §6).
// Each subcommand's options are in its table below; `citeforge data --help` lists them.
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

std::string single_positional(const CliArgs& cli) {
  if (cli.positional.size() != 1)
    throw Error(cli.command->name + ": expected one example file (JSONL), got " +
                std::to_string(cli.positional.size()) + " arguments");
  return cli.positional[0];
}

int to_count(long value, const std::string& option) {
  if (value < 0 || value > 1000000) throw Error("--" + option + ": must be in [0, 1000000]");
  return static_cast<int>(value);
}

const CliCommand& import_synsciqa_cli() {
  static const CliCommand command{
      "data import synsciqa",
      "SynSciQA's CSV or JSON files as examples",
      "",
      "A record that cannot be used is skipped with a warning naming its line; --strict refuses\n"
      "the file instead.",
      {{"input", "FILE.csv|FILE.json", "a SynSciQA file (required)"},
       {"golden", "FILE.csv",
        "its golden-source file, for gold labels (default: silver labels "
        "from the reference answers)"},
       {"strict", "", "refuse the file on the first record that cannot be used"},
       {"out", "F.jsonl", "the examples to write (required)"}}};
  return command;
}

int import_synsciqa_command(const Args& args) {
  CliArgs cli = parse_cli(import_synsciqa_cli(), args);
  cli.no_positional();
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

const CliCommand& import_rage_cli() {
  static const CliCommand command{
      "data import rage",
      "a RAGE / BEIR data set (corpus, queries, qrels) as document mixtures",
      "",
      "Each query gets 1-3 relevant, K irrelevant and K seemingly relevant documents, shuffled\n"
      "with the seed; seemingly relevant ones are mined with BM25 when no file gives them.",
      {{"corpus", "F", "corpus.jsonl (required)"},
       {"queries", "F", "queries.jsonl (required)"},
       {"relevant", "F", "the relevant qrels (required)"},
       {"irrelevant", "F", "irrelevant qrels (default: sampled from the corpus)"},
       {"seemingly-relevant", "F", "seemingly relevant qrels (default: mined with BM25)"},
       {"seed", "N", "the mixtures' seed", "1"},
       {"min-relevant", "N", "relevant documents per query at least", "1"},
       {"max-relevant", "N", "relevant documents per query at most", "3"},
       {"num-irrelevant", "K", "irrelevant documents per query", "3"},
       {"num-seemingly-relevant", "K", "seemingly relevant documents per query", "3"},
       {"mine", "K", "BM25 candidates to mine seemingly relevant documents from", "10"},
       {"origin", "NAME", "the examples' origin", "rage"},
       {"split", "NAME", "the examples' split", "test"},
       {"out", "F.jsonl", "the examples to write (required)"}}};
  return command;
}

int import_rage_command(const Args& args) {
  CliArgs cli = parse_cli(import_rage_cli(), args);
  cli.no_positional();
  data::RageFiles files;
  files.corpus = cli.require("corpus");
  files.queries = cli.require("queries");
  files.relevant = cli.require("relevant");
  files.irrelevant = cli.get("irrelevant");
  files.seemingly_relevant = cli.get("seemingly-relevant");
  const std::string out = cli.require("out");
  data::RageImportOptions options;
  const long seed = cli.integer("seed");
  if (seed < 0) throw Error("data import rage: --seed must be >= 0");
  options.mixture.seed = static_cast<std::uint64_t>(seed);
  options.mixture.min_relevant = to_count(cli.integer("min-relevant"), "min-relevant");
  options.mixture.max_relevant = to_count(cli.integer("max-relevant"), "max-relevant");
  options.mixture.irrelevant = to_count(cli.integer("num-irrelevant"), "num-irrelevant");
  options.mixture.seemingly_relevant =
      to_count(cli.integer("num-seemingly-relevant"), "num-seemingly-relevant");
  options.mined_seemingly_relevant = to_count(cli.integer("mine"), "mine");
  options.origin = cli.require("origin");
  options.split = cli.require("split");
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

const CliCommand& import_jsonl_cli() {
  static const CliCommand command{
      "data import jsonl",
      "an example file checked field by field and written in canonical form",
      "",
      "",
      {{"input", "F.jsonl", "the examples to read (required)"},
       {"out", "F.jsonl", "the examples to write (required)"}}};
  return command;
}

int import_jsonl_command(const Args& args) {
  CliArgs cli = parse_cli(import_jsonl_cli(), args);
  cli.no_positional();
  // Reading validates every field (types, labels, duplicate ids and keys); writing puts the
  // fields in canonical order with defaults filled in.
  auto examples = data::read_examples_jsonl(cli.require("input"));
  data::write_examples_jsonl(cli.require("out"), examples);
  std::printf("wrote %zu examples to %s\n", examples.size(), cli.require("out").c_str());
  return 0;
}

int import_command(const Args& args) {
  return run_subcommand("data import", "import a data set as an example file (citeforge's JSONL)",
                        {{"synsciqa", &import_synsciqa_cli(), import_synsciqa_command},
                         {"rage", &import_rage_cli(), import_rage_command},
                         {"jsonl", &import_jsonl_cli(), import_jsonl_command}},
                        args);
}

const CliCommand& synth_cli() {
  static const CliCommand command{
      "data synth",
      "generate the synthetic citation world",
      "",
      "",
      {{"seed", "S", "the world's seed (default: the config's, else 1)"},
       {"config", "FILE.yaml", "a synthetic world config (default: the built-in one)"},
       {"out", "DIR", "where to write its splits (required)"}}};
  return command;
}

int synth_command(const Args& args) {
  CliArgs cli = parse_cli(synth_cli(), args);
  cli.no_positional();
  data::SynthConfig config;
  if (auto path = cli.get("config")) config = data::load_synth_config(*path);
  if (cli.has("seed")) {
    const long seed = cli.integer("seed");
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

const CliCommand& stats_cli() {
  static const CliCommand command{"data stats",
                                  "counts and shapes of an example file",
                                  "FILE.jsonl",
                                  "",
                                  {{"json", "", "print them as JSON"}}};
  return command;
}

int stats_command(const Args& args) {
  CliArgs cli = parse_cli(stats_cli(), args);
  const std::string path = single_positional(cli);
  data::ExampleStats stats = data::compute_example_stats(data::read_examples_jsonl(path));
  if (cli.has("json")) {
    std::cout << data::example_stats_json(stats);
  } else {
    std::cout << path << "\n" << data::format_example_stats(stats);
  }
  return 0;
}

const CliCommand& render_cli() {
  static const CliCommand command{
      "data render",
      "examples as the model sees them, with their reference answers",
      "FILE.jsonl",
      "",
      {{"template", "NAME|FILE", "the prompt template", "rage_numeric"},
       {"templates", "DIR", "where templates are looked up by name", "configs/templates"},
       {"id", "ID", "the example to show (default: the first --limit)"},
       {"limit", "N", "how many examples to show", "1"}}};
  return command;
}

int render_command(const Args& args) {
  CliArgs cli = parse_cli(render_cli(), args);
  const std::string path = single_positional(cli);
  const data::PromptTemplate tmpl =
      data::find_prompt_template(cli.require("template"), cli.require("templates"));
  const long limit = cli.integer("limit");
  if (limit < 0) throw Error("data render: --limit must be >= 0");
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

const char* data_summary() {
  return "import, synthesise, inspect and render example files";
}

int command_data(const Args& args) {
  return run_subcommand(
      "data", data_summary(),
      {{"import", nullptr, import_command, "import a data set as an example file"},
       {"synth", &synth_cli(), synth_command},
       {"stats", &stats_cli(), stats_command},
       {"render", &render_cli(), render_command}},
      args);
}

}  // namespace citeforge::trainer
