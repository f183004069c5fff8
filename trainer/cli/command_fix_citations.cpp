// `citeforge fix-citations`: corrects the citations of answers after generation (CiteFix,
// attribution/citefix.h) and writes the corrected answers in the --answers format, so that
// `score --answers` reads them back and the two can be compared.
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "attribution/citefix.h"
#include "attribution/model_scores.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/number_text.h"
#include "data/answers.h"
#include "data/example.h"
#include "models/chat_format.h"
#include "models/linear.h"
#include "models/tokenizer.h"
#include "trainer/cli/answers_input.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/cli_model.h"
#include "trainer/cli/commands.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {

const CliCommand& fix_citations_cli() {
  static const CliCommand command = [] {
    CliCommand c{"fix-citations", "correct answers' citations after generation (CiteFix)", "",
                 "Give --answers or --reference. The model methods (bertscore, attention,\n"
                 "ask_model) read the model that wrote the answers: --model, --chat, --template.",
                 answer_options()};
    const std::vector<CliOption> own{
        {"out", "FIXED.jsonl", "the corrected answers (required)"},
        {"method", "keyword|keyword_bm25|bertscore|attention|ask_model", "the correction",
         "keyword"},
        {"bm25-weight", "W", "keyword_bm25's weight of the question's BM25 score",
         number_text(attribution::FixOptions{}.bm25_weight)},
        {"template", "NAME|FILE", "the prompt template the answers were generated with"},
        {"templates", "DIR", "where templates are looked up by name", "configs/templates"},
        {"ask-template", "NAME|FILE", "ask_model's question to the model", "citefix_ask"},
        {"layer", "N", "bertscore's decoder block (default: the middle one)"}};
    c.options.insert(c.options.end(), own.begin(), own.end());
    for (auto& o : model_options()) c.options.push_back(o);
    return c;
  }();
  return command;
}

namespace {

// The model, its tokenizer and the templates a model method reads the answers with.
struct LoadedReader {
  std::unique_ptr<models::Tokenizer> tokenizer;
  attribution::ModelReader reader;
};

LoadedReader load_reader(const CliArgs& cli) {
  LoadedReader out;
  auto loaded = load_cli_model(cli, "fix-citations", [](const std::string& line) {
    std::fprintf(stderr, "[fix-citations] %s\n", line.c_str());
  });
  out.reader.model = loaded.model;
  out.tokenizer = std::move(loaded.tokenizer);
  out.reader.tokenizer = out.tokenizer.get();
  out.reader.chat = models::chat_template(cli.require("chat"));
  const std::string templates = cli.require("templates");
  out.reader.prompt = data::find_prompt_template(cli.require("template"), templates);
  out.reader.ask = data::find_prompt_template(cli.require("ask-template"), templates);
  if (out.reader.ask.citation_style != data::CitationStyle::numeric)
    throw Error("fix-citations: --ask-template " + out.reader.ask.name +
                " must be numeric: the model answers with a document's [n]");
  out.reader.hidden_layer = cli.has("layer") ? cli.integer("layer") : -1;
  return out;
}
}  // namespace

int command_fix_citations(const Args& args) {
  CliArgs cli = parse_cli(fix_citations_cli(), args);
  cli.no_positional();
  if (cli.has("answers") == cli.has("reference"))
    throw Error("fix-citations: give exactly one of --answers FILE or --reference NAME");
  const std::string data_path = cli.require("data");
  const std::string out_path = cli.require("out");
  attribution::FixOptions options;
  try {
    options.method = attribution::parse_fix_method(cli.require("method"));
  } catch (const Error& e) {
    throw Error(std::string("fix-citations: --method: ") + e.what());
  }
  options.bm25_weight = cli.number("bm25-weight");
  if (!(options.bm25_weight >= 0)) throw Error("fix-citations: --bm25-weight must be >= 0");

  auto examples = data::read_examples_jsonl(data_path);
  if (examples.empty()) fail_at(data_path, "", "no examples");
  const bool with_model = attribution::needs_model(options.method);
  for (const char* option :
       {"model", "adapter", "quantization", "chat", "template", "ask-template", "layer", "dtype"})
    if (!with_model && cli.has(option))
      throw Error(std::string("fix-citations: --") + option + " is for the model methods, not " +
                  attribution::to_string(options.method));
  const auto answers = answers_for(examples, data_path, cli);
  if (with_model)
    for (const char* option : {"model", "chat", "template"})
      if (!cli.has(option)) {
        std::string message = "fix-citations: --method ";
        message += attribution::to_string(options.method);
        message +=
            " reads the model that wrote the answers: give --model DIR|FILE.gguf, "
            "--chat FORMAT and --template NAME|FILE (missing --";
        message += option;
        message += ")";
        throw Error(message);
      }
  LoadedReader loaded;
  if (with_model) loaded = load_reader(cli);
  // The NF4 or dtype-converted base is converted once for all answers, not per forward pass.
  const models::DequantizedWeights dequantize_once(with_model);
  std::map<std::string, std::string> fixed;
  int points = 0, changed = 0, answers_changed = 0, skipped = 0;
  Progress progress("fix-citations", int64_t(examples.size()));
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < examples.size(); ++i) {
    auto result = with_model ? attribution::fix_citations_with_model(loaded.reader, examples[i],
                                                                     answers[i], options.method)
                             : attribution::fix_citations(examples[i], answers[i], options);
    if (result.skipped) {
      ++skipped;
      std::fprintf(stderr, "[fix-citations] %s: %s: kept as it was\n", examples[i].id.c_str(),
                   result.why.c_str());
    }
    points += result.points;
    changed += result.changed;
    answers_changed += result.answer != answers[i] ? 1 : 0;
    fixed[examples[i].id] = std::move(result.answer);
    if (with_model) progress.update(int64_t(i + 1), "answers");
  }
  const double seconds = seconds_since(start);
  data::write_answers_jsonl(out_path, fixed);
  std::printf(
      "fix-citations (%s): %zu answers, %d cited points, %d re-cited; %d answers changed, %d "
      "skipped; %.3f ms per answer; wrote %s\n",
      attribution::to_string(options.method), examples.size(), points, changed, answers_changed,
      skipped, 1000.0 * seconds / double(examples.size()), out_path.c_str());
  return 0;
}

}  // namespace citeforge::trainer
