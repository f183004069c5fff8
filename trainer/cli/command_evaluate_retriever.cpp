// `citeforge evaluate-retriever`: a retriever judged by its passages and by the answers they
// lead to (LLM-retEval), and a model's answers in HAGRID's three scenarios (docs/design.md §3c).
// BM25 over a corpus (--corpus passages, or every source of every example) retrieves the top k
// for each question; Recall@k, Precision@k and F1@k are taken against the question's relevant
// sources. With --model, the model answers each question
//  - from its given sources (scenario G), from the k retrieved passages (retrieve-then-generate),
//    without sources, cited afterwards by retrieving for each sentence (generate-then-retrieve),
//    and from k passages drawn at random (the chance level of the retrieved ones);
//  - each answer's citations are scored against the passages it had, labelled relevant where
//    they are the question's gold sources, and with --reference its text is compared with the
//    reference answer (ROUGE-L, BLEU; citations removed from both);
//  - each scenario's precision, recall and F1 are tested against its chance reference on the
//    same questions (the paired test every table uses), the p-values Holm-adjusted over the
//    scenarios x metrics of one call, and the per-question scores written beside the answers
//    (scores.jsonl), so any two columns can be compared with `citeforge paired`;
//  - the answer from retrieved passages is compared with the answer from the gold sources by
//    ROUGE-L, exact match and the model itself as judge (configs/templates/answers_agree.yaml,
//    yes/no log-odds): a retriever whose passages change the answer little is as good as the
//    gold passages for this model, whatever its recall says. The same comparison for the random
//    passages is the floor, and the judge asked about two copies of one answer the ceiling.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "attribution/yes_no_judge.h"
#include "common/error.h"
#include "common/file_io.h"
#include "data/citations.h"
#include "data/example.h"
#include "data/prompt_template.h"
#include "models/chat_format.h"
#include "models/linear.h"
#include "models/tokenizer.h"
#include "retrieval/corpus.h"
#include "retrieval/ranking_metrics.h"
#include "retrieval/retriever_evaluation.h"
#include "retrieval/scenarios.h"
#include "rewards/text_overlap.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/cli_model.h"
#include "trainer/cli/commands.h"
#include "trainer/eval/eval_record.h"
#include "trainer/eval/evaluate.h"
#include "trainer/eval/paired.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {
const CliCommand& evaluate_retriever_cli() {
  static const CliCommand command = [] {
    CliCommand c{
        "evaluate-retriever",
        "judge a retriever by its passages and by the answers they lead to (LLM-retEval)",
        "",
        "BM25's Recall/Precision/F1@k over the corpus; with --model (and --chat, --template)\n"
        "also answers in the G, RTG and GTR scenarios and from random passages.",
        {{"data", "FILE.jsonl", "the questions with their gold sources (required)"},
         {"corpus", "PASSAGES.jsonl", "the passages (default: every source of --data)"},
         {"k", "N", "passages retrieved per question", "5"},
         {"out", "DIR", "write summary.json and the answers here"}}};
    for (auto& o : model_options()) c.options.push_back(o);
    const std::vector<CliOption> own{
        {"template", "NAME|FILE", "the prompt template to answer with"},
        {"templates", "DIR", "where templates are looked up by name", "configs/templates"},
        {"reference", "NAME", "score the answers' text against this reference answer"},
        {"judge-template", "NAME|FILE", "the model judge's question", "answers_agree"},
        {"limit", "N", "answer the first N questions (default: all)"},
        {"max-new-tokens", "N", "tokens per answer at most", "128"},
        {"batch-size", "N", "answers decoded together", "8"},
        {"seed", "S", "the seed of the random passages", "0"}};
    c.options.insert(c.options.end(), own.begin(), own.end());
    return c;
  }();
  return command;
}

namespace {

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

double mean(const std::vector<double>& values) {
  if (values.empty()) return std::nan("");
  double sum = 0;
  for (double v : values) sum += v;
  return sum / double(values.size());
}

// The answer's words without its citations, for comparing texts.
std::string without_citations(const data::Example& example, const std::string& answer) {
  return data::strip_citations(
      answer, data::parse_citations(answer, example.sources, example.citation_style));
}

// One scenario's answers: citation scores against the passages each answer had, and with a
// reference answer, the text's agreement with it.
struct ScenarioAnswers {
  std::string name;
  std::vector<data::Example> examples;  // as scored: the sources each answer could cite
  std::vector<std::string> answers;
};

// The metrics whose paired test against chance the summary carries: the ones the record's table
// shows. The others with a chance column (reward, source quality) stay in the per-question file.
const std::vector<std::string>& tested_metrics() {
  static const std::vector<std::string> names = {"precision", "recall", "f1"};
  return names;
}

// One scenario's citation scores, per question and in aggregate, with the paired tests against
// chance (p-values not yet adjusted; add_paired_tests adjusts them).
struct ScoredScenario {
  std::string name;  // "given", "rtg", "gtr", "random"
  EvalRecord record;
  std::vector<PairedComparison> against_chance;
  nlohmann::ordered_json summary;
};

ScoredScenario score_scenario(const ScenarioAnswers& s,
                              const std::optional<std::string>& reference) {
  // HAGRID's citation overlap with the reference answer's citations: only the given sources
  // are the ones the reference cites, and only where every example has that reference.
  EvalOptions options;
  if (reference && s.name == "given" &&
      std::all_of(s.examples.begin(), s.examples.end(),
                  [&](const data::Example& e) { return e.references.count(*reference) > 0; }))
    options.overlap_reference = reference;
  ScoredScenario scored;
  scored.name = s.name;
  scored.record = evaluate_answers(s.examples, s.answers, options);
  for (const auto& c : paired_comparisons(scored.record, nullptr, nullptr))
    if (std::find(tested_metrics().begin(), tested_metrics().end(), c.metric) !=
        tested_metrics().end())
      scored.against_chance.push_back(c);
  auto& out = scored.summary;
  for (const char* m : {"precision", "recall", "f1", "chance_f1", "distinct_citations",
                        "answer_length", "overlap_precision", "overlap_recall"})
    if (const auto* a = find_aggregate(scored.record.aggregates, m)) out[m] = aggregate_json(*a);
  if (reference) {
    std::vector<double> rouge;
    std::vector<std::string> candidates;
    std::vector<std::vector<std::string>> references;
    for (std::size_t i = 0; i < s.examples.size(); ++i) {
      const auto& e = s.examples[i];
      const auto it = e.references.find(*reference);
      if (it == e.references.end()) continue;
      const std::string candidate = without_citations(e, s.answers[i]);
      const std::string wanted = without_citations(e, it->second);
      rouge.push_back(rewards::rouge_l(candidate, wanted).f);
      candidates.push_back(candidate);
      references.push_back({wanted});
    }
    out["reference"] = *reference;
    out["with_reference"] = rouge.size();
    out["rouge_l"] = json_number(mean(rouge));
    out["bleu"] = json_number(candidates.empty() ? std::nan("")
                                                 : rewards::corpus_bleu(candidates, references));
  }
  return scored;
}

// Each scenario's "paired" object: {chance: {metric: {difference, count, ci_low, ci_high, p,
// p_holm}}}, p_holm adjusted over every test of `scenarios` as one family, as the tables do.
void add_paired_tests(std::vector<ScoredScenario>& scenarios) {
  std::vector<double> p_values;
  for (const auto& s : scenarios)
    for (const auto& c : s.against_chance) p_values.push_back(c.test.p_value);
  const std::vector<double> holm = rewards::holm_adjusted(p_values);
  std::size_t k = 0;
  for (auto& s : scenarios) {
    auto paired = paired_to_json(s.against_chance);
    for (const auto& c : s.against_chance)
      paired["chance"][c.metric]["p_holm"] = json_number(holm[k++]);
    s.summary["paired"] = paired;
  }
}

// scores.jsonl: one line per question, every scenario's per-question metric columns as
// "<scenario>_<metric>" (chance columns as "<scenario>_chance_<metric>").
void write_scores(const std::string& out, const std::vector<ScoredScenario>& scenarios) {
  std::string text;
  const auto& ids = scenarios.front().record.ids;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    nlohmann::ordered_json line;
    line["id"] = ids[i];
    for (const auto& s : scenarios)
      for (const auto& [metric, values] : s.record.metrics)
        line[s.name + "_" + metric] = json_number(values[i]);
    text += line.dump() + "\n";
  }
  std::filesystem::create_directories(out);
  write_file_atomically((std::filesystem::path(out) / "scores.jsonl").string(), text);
}

// k passages drawn at random (seeded, no repeats): the chance level of the retrieved ones.
std::vector<std::size_t> random_passages(std::size_t count, std::size_t corpus_size,
                                         std::mt19937_64& rng) {
  std::vector<std::size_t> drawn;
  std::uniform_int_distribution<std::size_t> pick(0, corpus_size - 1);
  while (drawn.size() < std::min(count, corpus_size)) {
    const auto p = pick(rng);
    if (std::find(drawn.begin(), drawn.end(), p) == drawn.end()) drawn.push_back(p);
  }
  return drawn;
}

// LLM-retEval's comparison of answers with the answers from the gold sources.
nlohmann::ordered_json compare_answers(const std::vector<std::string>& answers,
                                       const std::vector<std::string>& gold_answers,
                                       const std::vector<double>& judge_log_odds) {
  std::vector<double> rouge, exact, agree, finite;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    rouge.push_back(rewards::rouge_l(answers[i], gold_answers[i]).f);
    exact.push_back(normalized(answers[i]) == normalized(gold_answers[i]));
  }
  for (double lo : judge_log_odds)
    if (std::isfinite(lo)) {
      finite.push_back(lo);
      agree.push_back(lo > 0);
    }
  nlohmann::ordered_json out;
  out["rouge_l"] = json_number(mean(rouge));
  out["exact_match"] = json_number(mean(exact));
  if (!judge_log_odds.empty()) {
    out["judge_agrees"] = json_number(mean(agree));
    out["judge_log_odds"] = json_number(mean(finite));
    out["judge_unread"] = judge_log_odds.size() - finite.size();  // prompts too long
  }
  return out;
}

// The scenarios' answers to the first `limit` questions: from the given sources, from the
// retrieved passages (RTG), without sources then cited by retrieval (GTR), and from random
// passages (the floor).
struct ScenarioSet {
  ScenarioAnswers given{"given", {}, {}}, rtg{"rtg", {}, {}}, gtr{"gtr", {}, {}},
      random{"random", {}, {}};
  std::vector<std::string> closed_book;  // GTR's answers before they were cited
  int uncited = 0;                       // GTR's sentences that found no passage
};

ScenarioSet answer_scenarios(const CliArgs& cli, CliModel& loaded,
                             const std::vector<data::Example>& examples,
                             const retrieval::Corpus& corpus,
                             const std::vector<std::vector<std::size_t>>& rankings, long k,
                             std::size_t limit) {
  const std::string templates = cli.require("templates");
  PromptFormat format;
  format.tokenizer = loaded.tokenizer.get();
  format.chat = models::chat_template(cli.require("chat"));
  format.prompt = data::find_prompt_template(cli.require("template"), templates);
  PromptFormat closed = format;
  closed.prompt = data::find_prompt_template("closed_book", templates);
  ScenarioSet s;
  s.given.examples = {examples.begin(), examples.begin() + long(limit)};
  std::vector<data::Example> closed_book;
  std::mt19937_64 rng(uint64_t(cli.integer("seed")));
  for (std::size_t i = 0; i < limit; ++i) {
    s.rtg.examples.push_back(retrieval::with_ranked_passages(examples[i], corpus, rankings[i]));
    s.random.examples.push_back(retrieval::with_ranked_passages(
        examples[i], corpus, random_passages(rankings[i].size(), corpus.passages.size(), rng)));
    closed_book.push_back(retrieval::closed_book(examples[i]));
  }
  const models::DequantizedWeights once;
  const long new_tokens = cli.integer("max-new-tokens"), batch = cli.integer("batch-size");
  auto answer = [&](const PromptFormat& f, const std::vector<data::Example>& e, const char* what) {
    return generate_answers(loaded.model, f, e, new_tokens, batch, what).answers;
  };
  s.given.answers = answer(format, s.given.examples, "answers from the given sources");
  s.rtg.answers = answer(format, s.rtg.examples, "answers from retrieved passages");
  s.random.answers = answer(format, s.random.examples, "answers from random passages");
  s.closed_book = answer(closed, closed_book, "answers without sources");
  for (std::size_t i = 0; i < limit; ++i) {
    auto a = retrieval::attribute_closed_book_answer(corpus, examples[i], s.closed_book[i],
                                                     std::size_t(k));
    s.gtr.examples.push_back(std::move(a.example));
    s.gtr.answers.push_back(std::move(a.answer));
    s.uncited += a.uncited_sentences;
  }
  return s;
}

// The judge's log-odds that each answer says the same as the one from the gold sources, for
// RTG, random passages and two copies of the gold answer (the most agreement it can show).
struct JudgedAnswers {
  std::vector<std::string> given, rtg, random;  // the answers without their citations
  std::vector<double> same, rtg_odds, random_odds;
};

JudgedAnswers judge_answers(const CliArgs& cli, CliModel& loaded, const ScenarioSet& s,
                            const std::vector<data::Example>& examples) {
  attribution::YesNoJudge judge = cli_judge(cli, loaded);
  JudgedAnswers out;
  const std::size_t limit = s.given.answers.size();
  for (std::size_t i = 0; i < limit; ++i) {
    out.given.push_back(without_citations(s.given.examples[i], s.given.answers[i]));
    out.rtg.push_back(without_citations(s.rtg.examples[i], s.rtg.answers[i]));
    out.random.push_back(without_citations(s.random.examples[i], s.random.answers[i]));
  }
  Progress progress("judge the answers", int64_t(limit));
  auto ask = [&](const std::string& question, const std::string& a, const std::string& b) {
    const auto lo =
        attribution::yes_no_log_odds(judge, question, {{"Answer A", a}, {"Answer B", b}});
    return lo ? *lo : std::nan("");
  };
  for (std::size_t i = 0; i < limit; ++i) {
    const std::string& q = examples[i].question;
    out.same.push_back(ask(q, out.given[i], out.given[i]));
    out.rtg_odds.push_back(ask(q, out.given[i], out.rtg[i]));
    out.random_odds.push_back(ask(q, out.given[i], out.random[i]));
    progress.update(int64_t(i + 1), "questions");
  }
  progress.finish(std::to_string(limit) + " questions");
  return out;
}

void print_answer_scores(const nlohmann::ordered_json& answers,
                         const std::optional<std::string>& reference) {
  auto number = [](const nlohmann::ordered_json& j, const char* key) {
    if (!j.contains(key)) return std::nan("");
    const auto& v = j[key];
    if (v.is_object()) return v.value("mean", std::nan(""));
    return v.is_number() ? v.get<double>() : std::nan("");
  };
  std::printf("answers to %zu questions (citations scored against the passages each had):\n",
              answers["questions"].get<std::size_t>());
  for (const char* name : {"given", "rtg", "gtr", "random"}) {
    const auto& j = answers["scenarios"][name];
    std::printf("  %-7s P %.3f  R %.3f  F1 %.3f (chance %.3f", name, number(j, "precision"),
                number(j, "recall"), number(j, "f1"), number(j, "chance_f1"));
    if (j.contains("paired") && j["paired"].contains("chance") &&
        j["paired"]["chance"].contains("f1")) {
      const auto& t = j["paired"]["chance"]["f1"];
      std::printf("; paired %+.3f [%+.3f, %+.3f], Holm p %.2g", number(t, "difference"),
                  number(t, "ci_low"), number(t, "ci_high"), number(t, "p_holm"));
    }
    std::printf(")");
    if (reference)
      std::printf("  vs %s: ROUGE-L %.3f  BLEU %.1f", reference->c_str(), number(j, "rouge_l"),
                  number(j, "bleu"));
    std::printf("\n");
  }
  std::printf(
      "compared with the answers from the given sources (ROUGE-L, exact match, judge "
      "agrees):\n");
  for (const char* c : {"same_answer", "rtg", "random"}) {
    const auto& j = answers["compared_with_given"][c];
    std::printf("  %-11s %.3f  %.3f  %.3f\n", c, number(j, "rouge_l"), number(j, "exact_match"),
                number(j, "judge_agrees"));
  }
}

void write_scenario_answers(const std::string& out, const std::vector<data::Example>& examples,
                            const ScenarioSet& s, const JudgedAnswers& judged) {
  std::string text;
  for (std::size_t i = 0; i < s.given.answers.size(); ++i)
    text += nlohmann::ordered_json({{"id", examples[i].id},
                                    {"given", s.given.answers[i]},
                                    {"rtg", s.rtg.answers[i]},
                                    {"gtr", s.gtr.answers[i]},
                                    {"closed_book", s.closed_book[i]},
                                    {"random", s.random.answers[i]},
                                    {"judge_log_odds_rtg", json_number(judged.rtg_odds[i])},
                                    {"judge_log_odds_random", json_number(judged.random_odds[i])}})
                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
            "\n";
  std::filesystem::create_directories(out);
  write_file_atomically((std::filesystem::path(out) / "answers.jsonl").string(), text);
}

// With --model: the scenarios' answers scored, compared with the gold-source answers, printed,
// and (with --out) written; returns their summary.
nlohmann::ordered_json evaluate_model_answers(const CliArgs& cli,
                                              const std::vector<data::Example>& examples,
                                              const retrieval::Corpus& corpus,
                                              const std::vector<std::vector<std::size_t>>& rankings,
                                              long k) {
  for (const char* option : {"chat", "template"})
    if (!cli.has(option)) throw Error(std::string("evaluate-retriever: --model needs --") + option);
  auto loaded = load_cli_model(cli, "evaluate-retriever", [](const std::string& line) {
    std::fprintf(stderr, "[evaluate-retriever] %s\n", line.c_str());
  });
  std::optional<std::string> reference;
  if (cli.has("reference")) reference = cli.require("reference");
  const std::size_t limit = std::min<std::size_t>(
      examples.size(),
      std::size_t(cli.has("limit") ? cli.integer("limit") : long(examples.size())));
  const ScenarioSet s = answer_scenarios(cli, loaded, examples, corpus, rankings, k, limit);
  const JudgedAnswers judged = judge_answers(cli, loaded, s, examples);
  nlohmann::ordered_json answers;
  answers["questions"] = limit;
  answers["scenarios"] = nlohmann::ordered_json::object();
  std::vector<ScoredScenario> scored;
  for (const auto* scenario : {&s.given, &s.rtg, &s.gtr, &s.random})
    scored.push_back(score_scenario(*scenario, reference));
  add_paired_tests(scored);
  for (const auto& sc : scored) answers["scenarios"][sc.name] = sc.summary;
  answers["paired_note"] =
      "each scenario against its chance reference on the same questions; p_holm adjusted over "
      "the scenarios x metrics of this summary";
  answers["scenarios"]["gtr"]["uncited_sentences"] = s.uncited;
  answers["compared_with_given"]["same_answer"] =
      compare_answers(judged.given, judged.given, judged.same);
  answers["compared_with_given"]["rtg"] =
      compare_answers(judged.rtg, judged.given, judged.rtg_odds);
  answers["compared_with_given"]["random"] =
      compare_answers(judged.random, judged.given, judged.random_odds);
  print_answer_scores(answers, reference);
  if (auto out = cli.get("out")) {
    write_scenario_answers(*out, examples, s, judged);
    write_scores(*out, scored);
  }
  return answers;
}

}  // namespace

int command_evaluate_retriever(const Args& args) {
  CliArgs cli = parse_cli(evaluate_retriever_cli(), args);
  cli.no_positional();
  const std::string data_path = cli.require("data");
  const long k = cli.integer("k");
  if (k < 1) throw Error("evaluate-retriever: --k must be >= 1");
  const auto examples = data::read_examples_jsonl(data_path);
  if (examples.empty()) fail_at(data_path, "", "no examples");
  const auto corpus_path = cli.get("corpus");
  const auto corpus = corpus_path ? retrieval::corpus_from_passages(
                                        retrieval::read_passages_jsonl(*corpus_path), *corpus_path)
                                  : retrieval::corpus_from_examples(examples);
  const std::string corpus_origin = corpus_path ? *corpus_path : data_path;
  if (corpus.passages.empty())
    fail_at(corpus_origin, "", "no passage has text: the corpus is empty");
  std::printf(
      "corpus: %zu passages from %s (%d repeated sources merged, %d empty left out); "
      "k %ld%s\n",
      corpus.passages.size(), corpus_origin.c_str(), corpus.duplicates_merged, corpus.empty_skipped,
      k, std::size_t(k) > corpus.passages.size() ? " (more than the corpus holds)" : "");

  const auto r = retrieval::evaluate_retriever(corpus, examples, std::size_t(k));
  nlohmann::ordered_json summary;
  summary["data"] = data_path;
  summary["corpus"] = corpus_origin;
  summary["k"] = k;
  summary["passages"] = corpus.passages.size();
  summary["questions"] = examples.size();
  summary["questions_without_gold"] = r.without_gold;
  summary["gold_sources_not_in_corpus"] = r.gold_outside;
  summary["recall_at_k"] = json_number(r.recall);
  summary["precision_at_k"] = json_number(r.precision);
  summary["f1_at_k"] = json_number(r.f1);
  std::printf(
      "Recall@%ld %.3f  Precision@%ld %.3f  F1@%ld %.3f  (%zu questions; %d without a "
      "relevant passage in the corpus, left out of recall and F1)\n",
      k, r.recall, k, r.precision, k, r.f1, examples.size(), r.without_gold);
  if (r.gold_outside > 0)
    std::printf("warning: %d relevant sources of the questions are not in the corpus (by text)\n",
                r.gold_outside);
  if (cli.has("model"))
    summary["answers"] = evaluate_model_answers(cli, examples, corpus, r.rankings, k);
  if (auto out = cli.get("out")) {
    std::filesystem::create_directories(*out);
    write_file_atomically((std::filesystem::path(*out) / "summary.json").string(),
                          summary.dump(2) + "\n");
    std::printf("wrote %s/summary.json\n", out->c_str());
  }
  return 0;
}

}  // namespace citeforge::trainer
