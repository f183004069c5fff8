#include "trainer/eval/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>

#include "attribution/attributability.h"
#include "attribution/citation_baselines.h"
#include "attribution/citefix.h"
#include "attribution/model_scores.h"
#include "common/fault.h"
#include "common/file_io.h"
#include "models/generate.h"
#include "models/lora.h"
#include "retrieval/scenarios.h"
#include "trainer/eval/checkpoint_retention.h"
#include "trainer/eval/eval_archive.h"
#include "trainer/eval/eval_record.h"
#include "trainer/eval/partial_answers.h"
#include "trainer/eval/results.h"
#include "trainer/run/out_of_memory.h"
#include "trainer/run/progress.h"
#include "trainer/run/run_log.h"

namespace citeforge::trainer {

GeneratedAnswers generate_answers(models::LlamaForCausalLM& model, const PromptFormat& format,
                                  const std::vector<data::Example>& examples,
                                  int64_t max_new_tokens, int64_t batch_size,
                                  const std::string& label, const std::string& partial_path,
                                  bool share_prompt_prefix) {
  GeneratedAnswers out;
  std::vector<std::vector<int64_t>> prompts;
  const int64_t room = model->config.context_length() - max_new_tokens;
  int64_t cut = 0;
  for (const auto& ex : examples) {
    out.prompts.push_back(data::render_prompt(format.prompt, ex));
    prompts.push_back(encode_prompt(*format.tokenizer, format.chat, format.prompt, ex));
    cut += fit_prompt(prompts.back(), room);
  }
  if (cut > 0)
    std::fprintf(stderr,
                 "[%s] warning: %lld of %zu prompts are longer than the model's %lld positions "
                 "allow with %lld new tokens; their middle (sources) was cut\n",
                 label.c_str(), (long long)cut, examples.size(),
                 (long long)model->config.context_length(), (long long)max_new_tokens);
  out.answers.resize(examples.size());
  std::map<std::size_t, std::string> done;
  if (!partial_path.empty()) done = read_partial_answers(partial_path, examples);
  for (const auto& [index, answer] : done) out.answers[index] = answer;
  if (!done.empty())
    std::fprintf(stderr, "[%s] resuming: %zu of %zu answers kept from %s\n", label.c_str(),
                 done.size(), examples.size(), partial_path.c_str());
  // Similar lengths batch together, so little compute goes into padding.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < examples.size(); ++i)
    if (!done.count(i)) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return prompts[a].size() < prompts[b].size();
  });
  models::SamplingOptions options;
  options.greedy = true;
  options.max_new_tokens = max_new_tokens;
  options.eos_ids = {format.tokenizer->eos_id()};
  options.share_prompt_prefix = share_prompt_prefix;
  const auto decode = [&](const std::vector<int64_t>& t) { return format.tokenizer->decode(t); };
  const bool was_training = model->is_training();
  model->eval();
  Progress progress(label, int64_t(order.size()));
  for (std::size_t begin = 0; begin < order.size(); begin += std::size_t(batch_size)) {
    const std::size_t end = std::min(order.size(), begin + std::size_t(batch_size));
    std::vector<std::vector<int64_t>> batch;
    for (std::size_t i = begin; i < end; ++i) batch.push_back(prompts[order[i]]);
    const std::size_t batch_index = begin / std::size_t(batch_size) + 1;
    auto generations = naming_out_of_memory(
        [&] {
          std::size_t longest = 0;
          for (const auto& p : batch) longest = std::max(longest, p.size());
          return label + ": answering a batch of " + std::to_string(batch.size()) +
                 " prompts of up to " + std::to_string(longest) + " tokens with " +
                 std::to_string(max_new_tokens) + " new tokens each";
        },
        [&] {
          maybe_out_of_memory_at("eval", int64_t(batch_index));
          return models::generate(model, batch, options, decode);
        });
    for (std::size_t i = begin; i < end; ++i) {
      out.answers[order[i]] = generations[i - begin].text;
      if (!partial_path.empty())
        append_partial_answer(partial_path, order[i], examples[order[i]].id, out.answers[order[i]]);
    }
    progress.update(int64_t(end), "answers");
    maybe_kill_at("eval", int64_t(batch_index));
  }
  progress.finish(std::to_string(order.size()) + " answers");
  if (was_training) model->train();
  return out;
}

namespace {

void print_summary(const EvalRecord& record, const std::string& stage, int epoch,
                   const std::string& extra = "") {
  auto mean = [&](const char* name) {
    const auto* a = find_aggregate(record.aggregates, name);
    return a ? a->mean : std::nan("");
  };
  std::fprintf(stderr,
               "[eval] %s-%d %-12s F1 %.3f  P %.3f  R %.3f  reward %.3f  source quality %.3f  "
               "words %.1f%s\n",
               stage.c_str(), epoch, record.test_set.c_str(), mean("f1"), mean("precision"),
               mean("recall"), mean("reward"), mean("source_quality"), mean("answer_length"),
               extra.c_str());
}

// eval.attributability_threshold: the columns "attributability" (NaN for an answer without a
// citation, where it does not apply) and "chance_attributability" (the same sentences judged
// against random sources of their question), judged by the base model, adapters off, so that
// every checkpoint is measured by the same judge.
void add_attributability(RunContext& run, const std::vector<data::Example>& examples,
                         const std::vector<std::string>& answers, const EvalOptions& options,
                         const std::string& label, EvalRecord& record) {
  attribution::YesNoJudge judge;
  judge.model = run.policy.model;
  judge.tokenizer = run.data.format.tokenizer;
  judge.chat = run.data.format.chat;
  judge.prompt = data::find_prompt_template("attributable", run.setup.config.data.templates_dir);
  const double threshold = *run.setup.config.eval.attributability_threshold;
  const bool was_training = run.policy.model->is_training();
  run.policy.model->eval();
  models::AdaptersDisabled base(run.policy.model);
  const auto support = attribution::yes_no_support_judge(judge);
  std::mt19937_64 rng(options.bootstrap_seed);
  std::vector<double> scores, chance, applicable, applicable_chance;
  Progress progress("attributability " + label, int64_t(answers.size()));
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto a =
        attribution::attributability_with_chance(examples[i], answers[i], support, threshold, rng);
    if (a.judged.score) {
      applicable.push_back(*a.judged.score);
      applicable_chance.push_back(*a.chance);
    }
    scores.push_back(a.judged.score.value_or(std::nan("")));
    chance.push_back(a.chance.value_or(std::nan("")));
    progress.update(int64_t(i + 1), "answers");
  }
  progress.finish(std::to_string(applicable.size()) + " answers with a citation judged");
  if (was_training) run.policy.model->train();
  record.metrics.emplace_back("attributability", scores);
  record.metrics.emplace_back("chance_attributability", chance);
  record.aggregates.emplace_back(
      "attributability",
      rewards::aggregate(applicable, options.bootstrap_seed, options.bootstrap_resamples));
  record.aggregates.emplace_back(
      "chance_attributability",
      rewards::aggregate(applicable_chance, options.bootstrap_seed, options.bootstrap_resamples));
}

// Scores `answers` of one test set as the evaluation `test_set` and records it.
EvalRecord record_evaluation(RunContext& run, const TestSet& test, const std::string& test_set,
                             const std::string& stage, int epoch, const std::string& checkpoint,
                             const std::vector<std::string>& answers,
                             const std::vector<std::string>& prompts) {
  EvalOptions options;
  options.metrics = run.data.metric_options;
  options.data_path = test.spec.path;
  options.bootstrap_resamples = run.setup.config.eval.bootstrap_resamples;
  EvalRecord record = evaluate_answers(test.examples, answers, options);
  if (run.setup.config.eval.attributability_threshold)
    add_attributability(run, test.examples, answers, options,
                        stage + "-" + std::to_string(epoch) + " " + test_set, record);
  record.stage = stage;
  record.epoch = epoch;
  record.test_set = test_set;
  record.checkpoint = checkpoint;
  record.prompts = prompts;
  write_eval_archive(run.setup.dir.eval_archive(stage, epoch, test_set), record);
  // The paired tests read the base model's answers to the same questions and, for corrected
  // answers, the uncorrected ones from their archives, written before this one.
  auto archived = [&](const std::string& s, int e,
                      const std::string& t) -> std::optional<EvalRecord> {
    const std::string path = run.setup.dir.eval_archive(s, e, t);
    if (!file_exists(path)) return std::nullopt;
    return read_eval_archive(path);
  };
  const auto base = stage == "base" ? std::nullopt : archived("base", 0, test_set);
  const auto uncorrected_name = uncorrected_test_set(test_set);
  const auto uncorrected =
      uncorrected_name ? archived(stage, epoch, *uncorrected_name) : std::nullopt;
  const auto result =
      result_of(record, paired_comparisons(record, base ? &*base : nullptr,
                                           uncorrected ? &*uncorrected : nullptr,
                                           options.bootstrap_seed, options.bootstrap_resamples));
  record_result(run.setup.dir.results(), result);
  log_evaluation(run.setup.log, result.stage, result.epoch, result.test_set, result.metrics);
  return record;
}

// The test set's answers corrected by each of eval.corrections not evaluated yet, the model
// methods reading the model as it is now (the checkpoint that wrote the answers).
void evaluate_corrections(RunContext& run, const TestSet& test, const std::string& stage, int epoch,
                          const std::string& checkpoint, const std::vector<std::string>& answers,
                          const std::vector<std::string>& prompts) {
  if (test.scenario != retrieval::Scenario::given) return;
  std::optional<attribution::ModelReader> reader;
  for (const auto& name : run.setup.config.eval.corrections) {
    const std::string test_set = corrected_test_set(test.spec.name, name);
    if (file_exists(run.setup.dir.eval_archive(stage, epoch, test_set))) continue;
    const auto method = attribution::parse_fix_method(name);
    if (attribution::needs_model(method) && !reader) {
      reader.emplace();
      reader->model = run.policy.model;
      reader->tokenizer = run.data.format.tokenizer;
      reader->chat = run.data.format.chat;
      reader->prompt = run.data.format.prompt;
      reader->ask = data::find_prompt_template("citefix_ask", run.setup.config.data.templates_dir);
    }
    const bool was_training = run.policy.model->is_training();
    run.policy.model->eval();
    std::vector<std::string> fixed;
    int points = 0, changed = 0, skipped = 0;
    Progress progress("correct " + stage + "-" + std::to_string(epoch) + " " + test_set,
                      int64_t(answers.size()));
    for (std::size_t i = 0; i < answers.size(); ++i) {
      attribution::FixOptions options;
      options.method = method;
      auto result =
          attribution::needs_model(method)
              ? attribution::fix_citations_with_model(*reader, test.examples[i], answers[i], method)
              : attribution::fix_citations(test.examples[i], answers[i], options);
      points += result.points;
      changed += result.changed;
      skipped += result.skipped ? 1 : 0;
      fixed.push_back(std::move(result.answer));
      progress.update(int64_t(i + 1), "answers");
    }
    const double ms =
        1000.0 * progress.elapsed_seconds() / double(std::max<std::size_t>(1, answers.size()));
    progress.finish(std::to_string(answers.size()) + " answers");
    if (was_training) run.policy.model->train();
    auto record = record_evaluation(run, test, test_set, stage, epoch, checkpoint, fixed, prompts);
    char extra[160];
    std::snprintf(extra, sizeof extra,
                  "  (%d of %d points re-cited, %d answers skipped, %.0f ms per answer)", changed,
                  points, skipped, ms);
    print_summary(record, stage, epoch, extra);
  }
}

// eval.baselines: the base model's answers re-cited by each rule not evaluated yet (only the base
// model's: the rows show what a rule makes of answers no training touched).
void evaluate_baselines(RunContext& run, const TestSet& test, const std::string& stage, int epoch,
                        const std::string& checkpoint, const std::vector<std::string>& answers,
                        const std::vector<std::string>& prompts) {
  if (stage != "base" || test.scenario != retrieval::Scenario::given) return;
  for (const auto& name : run.setup.config.eval.baselines) {
    const std::string test_set = corrected_test_set(test.spec.name, name);
    if (file_exists(run.setup.dir.eval_archive(stage, epoch, test_set))) continue;
    const auto baseline = attribution::find_citation_baseline(name);
    if (!baseline) throw Error("eval.baselines: unknown citation baseline '" + name + "'");
    std::vector<std::string> cited;
    for (std::size_t i = 0; i < answers.size(); ++i)
      cited.push_back(attribution::cite_by_baseline(test.examples[i], answers[i], *baseline));
    auto record = record_evaluation(run, test, test_set, stage, epoch, checkpoint, cited, prompts);
    print_summary(record, stage, epoch);
  }
}

// Whether every correction and baseline of a given-documents test set evaluated at (stage,
// epoch) has its archive; a scenario's sets have none.
bool derived_sets_done(const RunContext& run, const TestSet& test, const std::string& stage,
                       int epoch) {
  if (test.scenario != retrieval::Scenario::given) return true;
  std::vector<std::string> names = run.setup.config.eval.corrections;
  if (stage == "base")
    names.insert(names.end(), run.setup.config.eval.baselines.begin(),
                 run.setup.config.eval.baselines.end());
  return std::all_of(names.begin(), names.end(), [&](const std::string& name) {
    return file_exists(
        run.setup.dir.eval_archive(stage, epoch, corrected_test_set(test.spec.name, name)));
  });
}

// eval.scenarios' gtr: the test set's questions answered without sources, then each answer
// cited from the corpus by retrieval and scored against the passages it was given.
void evaluate_closed_book(RunContext& run, const TestSet& test, const std::string& stage, int epoch,
                          const std::string& checkpoint) {
  const std::string archive = run.setup.dir.eval_archive(stage, epoch, test.spec.name);
  const std::string partial = partial_answers_path(archive);
  PromptFormat format = run.data.format;
  format.prompt = *test.closed_book;
  std::vector<data::Example> questions;
  for (const auto& e : test.examples) questions.push_back(retrieval::closed_book(e));
  const auto answers =
      generate_answers(run.policy.model, format, questions, run.setup.config.eval.max_new_tokens,
                       run.setup.config.eval.batch_size,
                       "eval " + stage + "-" + std::to_string(epoch) + " " + test.spec.name,
                       partial, run.setup.config.eval.share_prompt_prefix);
  TestSet attributed = test;
  std::vector<std::string> cited;
  int uncited = 0, sentences_total = 0;
  for (std::size_t i = 0; i < test.examples.size(); ++i) {
    auto a =
        retrieval::attribute_closed_book_answer(*test.corpus, test.examples[i], answers.answers[i],
                                                std::size_t(run.setup.config.eval.retrieval_k));
    attributed.examples[i] = std::move(a.example);
    cited.push_back(std::move(a.answer));
    uncited += a.uncited_sentences;
    sentences_total += a.sentences;
  }
  auto record = record_evaluation(run, attributed, test.spec.name, stage, epoch, checkpoint, cited,
                                  answers.prompts);
  std::filesystem::remove(partial);
  char extra[96];
  std::snprintf(extra, sizeof extra, "  (%d of %d sentences found no passage)", uncited,
                sentences_total);
  print_summary(record, stage, epoch, extra);
}

}  // namespace

void evaluate_all(RunContext& run, const std::string& stage, int epoch,
                  const std::string& checkpoint) {
  for (const auto& test : run.data.test_sets) {
    if (test.scenario == retrieval::Scenario::gtr) {
      if (!file_exists(run.setup.dir.eval_archive(stage, epoch, test.spec.name)))
        evaluate_closed_book(run, test, stage, epoch, checkpoint);
      continue;
    }
    const std::string archive = run.setup.dir.eval_archive(stage, epoch, test.spec.name);
    if (file_exists(archive)) {  // done before an interruption; corrections may be missing
      if (!derived_sets_done(run, test, stage, epoch)) {
        const auto done = read_eval_archive(archive);
        evaluate_corrections(run, test, stage, epoch, checkpoint, done.generations, done.prompts);
        evaluate_baselines(run, test, stage, epoch, checkpoint, done.generations, done.prompts);
      }
      continue;
    }
    const std::string label = "eval " + stage + "-" + std::to_string(epoch) + " " + test.spec.name;
    const std::string partial = partial_answers_path(archive);
    auto answers =
        generate_answers(run.policy.model, run.data.format, test.examples,
                         run.setup.config.eval.max_new_tokens, run.setup.config.eval.batch_size,
                         label, partial, run.setup.config.eval.share_prompt_prefix);
    auto record = record_evaluation(run, test, test.spec.name, stage, epoch, checkpoint,
                                    answers.answers, answers.prompts);
    std::filesystem::remove(partial);
    print_summary(record, stage, epoch);
    evaluate_corrections(run, test, stage, epoch, checkpoint, answers.answers, answers.prompts);
    evaluate_baselines(run, test, stage, epoch, checkpoint, answers.answers, answers.prompts);
  }
  const RunConfig& c = run.setup.config;
  if (stage == "base") return;
  const auto removed = prune_checkpoints(run.setup.dir, stage, c.checkpoint_keep_last,
                                         {c.selection.metric, c.selection.test_set});
  for (const auto& name : removed)
    std::fprintf(stderr,
                 "[checkpoints] removed %s (checkpoint_keep_last %d: %s's best so far by %s and "
                 "its last %d are kept)\n",
                 name.c_str(), c.checkpoint_keep_last, stage.c_str(), c.selection.metric.c_str(),
                 c.checkpoint_keep_last);
}

}  // namespace citeforge::trainer
