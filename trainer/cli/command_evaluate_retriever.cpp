// `citeforge evaluate-retriever`: a retriever judged by its passages and by the answers they
// lead to (LLM-retEval). BM25 over the data set's whole corpus (every source of every example)
// retrieves the top k for each question; Recall@k, Precision@k and F1@k are taken against the
// question's relevant sources. With --model, the model answers each question twice, from its
// gold sources (HAGRID's scenario G) and from the retrieved passages (retrieve-then-generate),
// and the two answers are compared by ROUGE-L and exact match: a retriever whose passages change
// the answer little is as good as the gold passages for this model, whatever its recall says.
// As many passages drawn at random give the chance level of that agreement.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "common/error.h"
#include "common/file_io.h"
#include "data/example.h"
#include "data/prompt_template.h"
#include "models/linear.h"
#include "models/tokenizer.h"
#include "retrieval/corpus.h"
#include "retrieval/ranking_metrics.h"
#include "rewards/text_overlap.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/cli_model.h"
#include "trainer/cli/commands.h"
#include "trainer/eval/evaluate.h"

namespace citeforge::trainer {
namespace {

constexpr const char* kUsage =
    "usage: citeforge evaluate-retriever --data FILE.jsonl [--k N] [--out DIR]\n"
    "  answers too: --model DIR|FILE.gguf [--adapter DIR] --chat FORMAT --template NAME|FILE\n"
    "  [--templates DIR] [--limit N] [--max-new-tokens N] [--batch-size N] "
    "[--dtype float32|bfloat16] [--seed S]";

// Whitespace-collapsed, lower-cased text: what exact match compares.
std::string normalized(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(char(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// The example with the retrieved passages as its sources, numbered 1..k in rank order.
data::Example with_passages(const data::Example& example, const retrieval::Corpus& corpus,
                            const std::vector<std::size_t>& ranked) {
  data::Example out = example;
  out.sources.clear();
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto& p = corpus.passages[ranked[i]];
    out.sources.push_back(
        {int(i + 1), p.name.empty() ? p.id : p.name, p.text, data::Label::unknown});
  }
  return out;
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return std::nan("");
  double sum = 0;
  for (double v : values) sum += v;
  return sum / double(values.size());
}

}  // namespace

int command_evaluate_retriever(const Args& args) {
  CliArgs cli = parse_cli("evaluate-retriever", args,
                          {"data", "k", "out", "model", "adapter", "chat", "template", "templates",
                           "limit", "max-new-tokens", "batch-size", "dtype", "seed"},
                          {});
  if (!cli.positional.empty())
    throw Error("evaluate-retriever: unexpected argument '" + cli.positional.front() + "'; " +
                kUsage);
  const std::string data_path = cli.require("data");
  const long k = cli.integer("k", 5);
  if (k < 1) throw Error("evaluate-retriever: --k must be >= 1");
  const auto examples = data::read_examples_jsonl(data_path);
  if (examples.empty()) fail_at(data_path, "", "no examples");
  const auto corpus = retrieval::corpus_from_examples(examples);
  if (corpus.passages.empty()) fail_at(data_path, "", "no source has text: the corpus is empty");
  std::printf(
      "corpus: %zu passages from %zu examples (%d repeated sources merged, %d empty left "
      "out); k %ld%s\n",
      corpus.passages.size(), examples.size(), corpus.duplicates_merged, corpus.empty_skipped, k,
      std::size_t(k) > corpus.passages.size() ? " (more than the corpus holds)" : "");

  std::vector<double> recall, precision, f1;
  int without_gold = 0;
  std::vector<std::vector<std::size_t>> rankings;
  for (const auto& e : examples) {
    rankings.push_back(retrieval::retrieve(corpus, e.question, std::size_t(k)));
    const auto s =
        retrieval::score_ranking(rankings.back(), retrieval::gold_passages(corpus, e), k);
    precision.push_back(s.precision);
    if (s.recall) {
      recall.push_back(*s.recall);
      f1.push_back(*s.f1);
    } else {
      ++without_gold;
    }
  }
  nlohmann::ordered_json summary;
  summary["data"] = data_path;
  summary["k"] = k;
  summary["passages"] = corpus.passages.size();
  summary["questions"] = examples.size();
  summary["questions_without_gold"] = without_gold;
  summary["recall_at_k"] = mean(recall);
  summary["precision_at_k"] = mean(precision);
  summary["f1_at_k"] = mean(f1);
  std::printf(
      "Recall@%ld %.3f  Precision@%ld %.3f  F1@%ld %.3f  (%zu questions; %d without a "
      "relevant source, left out of recall and F1)\n",
      k, mean(recall), k, mean(precision), k, mean(f1), examples.size(), without_gold);

  if (cli.has("model")) {
    for (const char* option : {"chat", "template"})
      if (!cli.has(option))
        throw Error(std::string("evaluate-retriever: --model needs --") + option + "; " + kUsage);
    auto loaded = load_cli_model(cli, "evaluate-retriever", [](const std::string& line) {
      std::fprintf(stderr, "[evaluate-retriever] %s\n", line.c_str());
    });
    auto& model = loaded.model;
    models::Tokenizer& tokenizer = *loaded.tokenizer;
    PromptFormat format;
    format.tokenizer = &tokenizer;
    format.chat = models::chat_template(cli.require("chat"));
    format.prompt = data::find_prompt_template(cli.require("template"),
                                               cli.get_or("templates", "configs/templates"));
    const std::size_t limit = std::min<std::size_t>(
        examples.size(), std::size_t(cli.integer("limit", long(examples.size()))));
    // The chance reference: as many passages drawn at random from the corpus (seeded), so the
    // answers' agreement can be read against what any k passages give.
    std::vector<data::Example> gold(examples.begin(), examples.begin() + limit), retrieved, random;
    std::mt19937_64 rng(uint64_t(cli.integer("seed", 0)));
    for (std::size_t i = 0; i < limit; ++i) {
      retrieved.push_back(with_passages(examples[i], corpus, rankings[i]));
      std::vector<std::size_t> drawn;
      std::uniform_int_distribution<std::size_t> pick(0, corpus.passages.size() - 1);
      while (drawn.size() < std::min(rankings[i].size(), corpus.passages.size())) {
        const auto p = pick(rng);
        if (std::find(drawn.begin(), drawn.end(), p) == drawn.end()) drawn.push_back(p);
      }
      random.push_back(with_passages(examples[i], corpus, drawn));
    }
    const models::DequantizedWeights once;
    const long new_tokens = cli.integer("max-new-tokens", 128),
               batch = cli.integer("batch-size", 8);
    const auto from_gold =
        generate_answers(model, format, gold, new_tokens, batch, "answers from gold sources");
    const auto from_retrieved = generate_answers(model, format, retrieved, new_tokens, batch,
                                                 "answers from retrieved passages");
    const auto from_random =
        generate_answers(model, format, random, new_tokens, batch, "answers from random passages");
    std::vector<double> rouge, exact, rouge_random;
    for (std::size_t i = 0; i < limit; ++i) {
      rouge.push_back(rewards::rouge_l(from_retrieved.answers[i], from_gold.answers[i]).f);
      exact.push_back(normalized(from_retrieved.answers[i]) == normalized(from_gold.answers[i]));
      rouge_random.push_back(rewards::rouge_l(from_random.answers[i], from_gold.answers[i]).f);
    }
    summary["answers_compared"] = limit;
    summary["answer_rouge_l"] = mean(rouge);
    summary["answer_exact_match"] = mean(exact);
    summary["answer_rouge_l_random_passages"] = mean(rouge_random);
    std::printf(
        "answers from retrieved vs gold passages (%zu questions): ROUGE-L F %.3f  exact "
        "match %.3f; from as many random passages: ROUGE-L F %.3f\n",
        limit, mean(rouge), mean(exact), mean(rouge_random));
    if (auto out = cli.get("out")) {
      std::string text;
      for (std::size_t i = 0; i < limit; ++i)
        text += nlohmann::json({{"id", examples[i].id},
                                {"from_gold", from_gold.answers[i]},
                                {"from_retrieved", from_retrieved.answers[i]},
                                {"from_random", from_random.answers[i]},
                                {"rouge_l", rouge[i]}})
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                "\n";
      std::filesystem::create_directories(*out);
      write_file_atomically((std::filesystem::path(*out) / "answers.jsonl").string(), text);
    }
  }
  if (auto out = cli.get("out")) {
    std::filesystem::create_directories(*out);
    write_file_atomically((std::filesystem::path(*out) / "summary.json").string(),
                          summary.dump(2) + "\n");
    std::printf("wrote %s/summary.json\n", out->c_str());
  }
  return 0;
}

}  // namespace citeforge::trainer
