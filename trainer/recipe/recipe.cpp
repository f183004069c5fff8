#include "trainer/recipe/recipe.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_io.h"
#include "data/random.h"
#include "data/synsciqa.h"
#include "data/synth.h"
#include "models/checkpoint_io.h"
#include "models/gguf_import.h"
#include "models/linear.h"
#include "models/model_init.h"
#include "models/tokenizer_train.h"
#include "rewards/citations.h"
#include "trainer/dist/dist_run.h"
#include "trainer/eval/evaluate.h"
#include "trainer/recipe/settings.h"
#include "trainer/report/run_tables.h"
#include "trainer/run/run_context.h"
#include "trainer/sft/lm_trainer.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;
namespace {

void say(const std::string& text) {
  std::fprintf(stderr, "[run] %s\n", text.c_str());
}

// The keys in which two resolved configs differ ("sft.lr", "data.test_sets"), leaving out those
// a finished run can take on without its results changing meaning: eval.corrections and
// eval.scenarios only add evaluations of the same checkpoints, eval.attributability_threshold
// adds a metric to the evaluations still to come, and threads only change speed. Gradient
// checkpointing trades speed for memory with the same gradients (up to rounding, as threads), so
// a run killed for memory can resume with it on. The retrieval depth and the judge's threshold
// count once both sides have them.
std::vector<std::string> config_differences(const std::string& before, const std::string& now) {
  YAML::Node a = YAML::Load(before), b = YAML::Load(now);
  auto both = [&](const char* key) {
    return a["eval"] && a["eval"][key] && b["eval"] && b["eval"][key];
  };
  // Settings of added evaluations count only where both sides have them.
  const bool both_retrieve = both("scenarios"), both_judge = both("attributability_threshold");
  for (YAML::Node* n : {&a, &b}) {
    n->remove("threads");
    for (const char* stage : {"pretrain", "sft", "ppo"})
      if ((*n)[stage]) (*n)[stage].remove("gradient_checkpointing");
    if (!(*n)["eval"]) continue;
    YAML::Node eval = (*n)["eval"];
    eval.remove("corrections");
    eval.remove("scenarios");
    if (!both_retrieve) eval.remove("retrieval_k");
    if (!both_judge) eval.remove("attributability_threshold");
  }
  std::vector<std::string> keys;
  std::function<void(const YAML::Node&, const YAML::Node&, const std::string&)> walk =
      [&](const YAML::Node& x, const YAML::Node& y, const std::string& prefix) {
        if (!x.IsDefined() || !y.IsDefined()) {  // a key one side has and the other not
          if (x.IsDefined() || y.IsDefined()) keys.push_back(prefix.substr(0, prefix.size() - 1));
          return;
        }
        if (x.IsMap() && y.IsMap()) {
          std::set<std::string> names;
          for (const auto& kv : x) names.insert(kv.first.as<std::string>());
          for (const auto& kv : y) names.insert(kv.first.as<std::string>());
          for (const auto& name : names) walk(x[name], y[name], prefix + name + ".");
          return;
        }
        if (YAML::Dump(x) != YAML::Dump(y)) keys.push_back(prefix.substr(0, prefix.size() - 1));
      };
  walk(a, b, "");
  return keys;
}

// The run directory holds the resolved config; a rerun with another config would mix two
// experiments in one directory, so that is an error rather than a silent overwrite.
void prepare_run_dir(const RunConfig& config, const std::string& run_dir) {
  const std::string resolved = run_config_to_yaml(config);
  const std::string path = (fs::path(run_dir) / "config.resolved.yaml").string();
  if (file_exists(path)) {
    if (config.resume == "never")
      fail_at(run_dir, "", "run directory exists and resume is 'never': choose another --out");
    const std::string before = read_file(path);
    const auto differences = config_differences(before, resolved);
    if (!differences.empty()) {
      std::string keys;
      for (std::size_t i = 0; i < differences.size() && i < 6; ++i)
        keys += (i ? ", " : "") + differences[i];
      if (differences.size() > 6) keys += ", ...";
      fail_at(path, "",
              "the run directory was made with a different config (it differs in " + keys +
                  "); use another --out, or the config it was made with");
    }
    say("continuing the run in " + run_dir);
    if (before != resolved)
      say("eval.corrections, eval.scenarios, eval.attributability_threshold or threads "
          "changed: new evaluations are added");
  }
  fs::create_directories(fs::path(run_dir) / "checkpoints");
  write_file_atomically(path, resolved);
}

std::string resolve_data_path(const RunContext& run, const std::string& path) {
  if (path.rfind("synth:", 0) == 0) return run.path("data/" + path.substr(6) + ".jsonl");
  return path;
}

// Examples from a data path of the config (see TestSetSpec): JSONL, the generated world, or a
// SynSciQA file imported on the fly (what it could not parse is reported, never dropped
// silently).
std::vector<data::Example> read_data(const RunContext& run, const std::string& path,
                                     const std::string& golden) {
  if (!is_synsciqa_path(path)) return data::read_examples_jsonl(resolve_data_path(run, path));
  data::SynsciqaReport report;
  auto examples = data::import_synsciqa(
      path, golden.empty() ? std::nullopt : std::optional<std::string>(golden), &report);
  say("imported " + std::to_string(examples.size()) + " SynSciQA examples from " + path +
      (golden.empty() ? " (silver labels)" : " with golden labels"));
  return examples;
}

// `count` of `examples` drawn with the run's seed on the named stream, and the rest, both in
// file order; `count` must be below the number of examples.
std::pair<std::vector<data::Example>, std::vector<data::Example>> seeded_split(
    const std::vector<data::Example>& examples, int count, uint64_t seed,
    const std::string& stream) {
  data::Rng rng(data::derive_seed(seed, stream));
  std::vector<bool> drawn(examples.size(), false);
  for (auto i : data::sample_indices(rng, examples.size(), std::size_t(count))) drawn[i] = true;
  std::pair<std::vector<data::Example>, std::vector<data::Example>> out;
  for (std::size_t i = 0; i < examples.size(); ++i)
    (drawn[i] ? out.first : out.second).push_back(examples[i]);
  return out;
}

// data.holdout: `count` training examples drawn with the seed, removed from `train`.
std::vector<data::Example> hold_out(std::vector<data::Example>& train, int count, uint64_t seed,
                                    const std::string& config_file) {
  if (std::size_t(count) >= train.size())
    throw Error(config_file + ": data.holdout: " + std::to_string(count) +
                " examples cannot be held out of a training set of " +
                std::to_string(train.size()) + "; some must be left to train on");
  auto [held, kept] = seeded_split(train, count, seed, "holdout");
  train = std::move(kept);
  return held;
}

// A test set's sample: N: a random subset of N examples (all when there are no more).
std::vector<data::Example> seeded_subset(const std::vector<data::Example>& examples, int count,
                                         uint64_t seed, const std::string& name) {
  if (std::size_t(count) >= examples.size()) return examples;
  return seeded_split(examples, count, seed, "sample:" + name).first;
}

void load_data(RunContext& run) {
  const auto& c = run.config;
  if (c.data.synth_enabled && !file_exists(run.path("data/synth_config.yaml"))) {
    say("generating the synthetic citation world into " + run.path("data"));
    data::write_synth(data::generate_synth(c.data.synth), run.path("data"));
  }
  run.train = read_data(run, c.data.train, c.data.train_golden);
  const std::string holdout_file = run.path("data/holdout.jsonl");
  std::vector<data::Example> holdout;
  if (c.data.holdout > 0) {
    holdout = hold_out(run.train, c.data.holdout, c.seed, c.file);
    // Written for reading and for `score`; every rank draws the same split from the seed.
    if (is_lead(run)) {
      std::filesystem::create_directories(run.path("data"));
      data::write_examples_jsonl(holdout_file, holdout);
    }
  }
  if (c.data.synth_enabled && c.data.synth.pretrain > 0 && c.pretrain.enabled &&
      !file_exists(run.path("base_model/model.safetensors")))
    run.pretrain_reading = data::read_examples_jsonl(run.path("data/pretrain.jsonl"));
  std::vector<TestSet> in_scenarios;
  // GTR's prompt, read once for every test set that is evaluated closed-book.
  std::shared_ptr<const data::PromptTemplate> closed_book;
  if (std::count(c.eval.scenarios.begin(), c.eval.scenarios.end(), "gtr"))
    closed_book = std::make_shared<data::PromptTemplate>(
        data::find_prompt_template("closed_book", c.data.templates_dir));
  for (const auto& spec : c.data.test_sets) {
    const bool held = spec.path == "holdout";
    TestSet t;
    t.spec = spec;
    t.examples = held ? holdout : read_data(run, spec.path, spec.golden);
    t.spec.path = held ? holdout_file : resolve_data_path(run, spec.path);
    // The retrieval corpus is the whole file's sources, not the sample's: a retriever faces
    // every passage the data set has.
    std::shared_ptr<const retrieval::Corpus> corpus;
    if (!c.eval.scenarios.empty() && spec.name != c.selection.test_set)
      corpus = std::make_shared<retrieval::Corpus>(retrieval::corpus_from_examples(t.examples));
    if (spec.sample > 0) t.examples = seeded_subset(t.examples, spec.sample, c.seed, spec.name);
    if (c.eval.max_examples > 0 && int(t.examples.size()) > c.eval.max_examples)
      t.examples.resize(c.eval.max_examples);
    if (corpus)
      for (const auto& name : c.eval.scenarios) {
        TestSet s = t;
        s.spec.name = spec.name + "@" + name;
        s.scenario = retrieval::parse_scenario(name, c.file + ": eval.scenarios");
        s.corpus = corpus;
        if (s.scenario == retrieval::Scenario::rtg)
          s.examples = retrieval::retrieve_then_generate(*corpus, s.examples,
                                                         std::size_t(c.eval.retrieval_k));
        else
          s.closed_book = closed_book;
        in_scenarios.push_back(std::move(s));
      }
    run.test_sets.push_back(std::move(t));
  }
  for (auto& t : in_scenarios) run.test_sets.push_back(std::move(t));
  std::string sizes;
  for (const auto& t : run.test_sets)
    sizes += ", " + t.spec.name + " " + std::to_string(t.examples.size()) +
             (t.spec.sample > 0 ? " (seeded sample)" : "") +
             (t.spec.path == holdout_file ? " (held out of train)" : "") +
             (t.corpus ? " (BM25 top " + std::to_string(c.eval.retrieval_k) + " of " +
                             std::to_string(t.corpus->passages.size()) + " passages)"
                       : "");
  say("data: train " + std::to_string(run.train.size()) + sizes);
}

// The reading split's answers with the citations removed, or said in words
// (data.reading_sources), under the name "reading".
std::vector<data::Example> reading_examples(const RunContext& run) {
  std::vector<data::Example> reading;
  for (const auto& ex : run.pretrain_reading) {
    auto answer = ex.references.find(run.config.data.reference);
    if (answer == ex.references.end()) continue;
    auto parsed = rewards::parse_citations(answer->second, ex.sources, ex.citation_style);
    reading.push_back(ex);
    reading.back().references["reading"] = run.config.data.reading_sources == "prose"
                                               ? rewards::citations_in_words(answer->second, parsed)
                                               : rewards::strip_citations(answer->second, parsed);
  }
  return reading;
}

// Text a built model learns its language from: the passages, the questions and the training
// prompts as the model will see them, never a training answer (those are what SFT teaches),
// and the passages of the reading split.
std::vector<std::string> world_texts(const RunContext& run) {
  std::vector<std::string> texts;
  std::set<std::string> seen;
  for (const auto* examples : {&run.train, &run.pretrain_reading})
    for (const auto& ex : *examples) {
      for (const auto& s : ex.sources)
        if (seen.insert(s.text).second) texts.push_back(s.text);
      if (examples == &run.pretrain_reading) continue;
      texts.push_back(ex.question);
      texts.push_back(data::render_prompt(run.format.prompt, ex));
    }
  return texts;
}

// Pre-training sequences: the world's text as packed language-model chunks, then the reading
// split, about entities of its own, as prompt -> citation-free answer with the loss on the
// answer. The base thereby learns to read (documents + question -> the fact) but never to
// cite, like the chat models of the papers; what SFT and PPO add is the citing.
struct PretrainingData {
  std::vector<TokenSequence> sequences;
  std::size_t reading = 0;  // how many of them are reading questions
  std::size_t drills = 0;   // how many are copy drills (pretrain.copy_drills)
};

PretrainingData pretraining_sequences(const RunContext& run) {
  PretrainingData data;
  data.sequences =
      encode_pretraining(world_texts(run), *run.tokenizer, run.config.pretrain.max_seq_len);
  auto reading = encode_sft(reading_examples(run), *run.tokenizer, run.format.chat,
                            run.format.prompt, "reading", run.config.pretrain.max_seq_len);
  data.reading = reading.sequences.size();
  for (auto& s : reading.sequences) data.sequences.push_back(std::move(s));
  const auto& p = run.config.pretrain;
  auto drills =
      copy_drill_sequences(p.copy_drills, run.tokenizer->vocab_size(), run.tokenizer->eos_id() + 1,
                           run.tokenizer->bos_id(), run.config.seed, p.copy_drill_tokens);
  data.drills = drills.size();
  for (auto& s : drills) data.sequences.push_back(std::move(s));
  return data;
}

// A .gguf model is imported once into the cache (models/gguf_import.h) and read from there like
// any HF directory; its tokenizer is the imported tokenizer.json.
void import_gguf_base(RunContext& run) {
  run.base_model_dir =
      models::gguf_model_dir(run.config.model.path, [](const std::string& line) { say(line); });
}

void prepare_tokenizer(RunContext& run) {
  const auto& m = run.config.model;
  std::string path = m.tokenizer;
  if (path.empty() && !run.base_model_dir.empty())
    path = models::find_tokenizer(run.base_model_dir);
  if (m.tokenizer_vocab > 0) {
    path = run.path("base_model/tokenizer.model");
    if (!file_exists(path)) {
      say("training a " + std::to_string(m.tokenizer_vocab) + "-piece SentencePiece tokenizer");
      auto texts = world_texts(run);
      for (const auto& ex : reading_examples(run)) {
        texts.push_back(data::render_prompt(run.format.prompt, ex));
        texts.push_back(ex.references.at("reading"));
      }
      for (const auto& ex : run.train) {
        texts.push_back(data::render_prompt(run.format.prompt, ex));
        auto it = ex.references.find(run.config.data.reference);
        if (it != ex.references.end()) texts.push_back(it->second);
      }
      models::train_tokenizer(texts, m.tokenizer_vocab, path);
    }
  }
  run.tokenizer = std::make_unique<models::Tokenizer>(path);
  run.format.tokenizer = run.tokenizer.get();
}

models::ModelConfig built_model_config(const RunContext& run) {
  const auto& b = run.config.model.build;
  models::ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = b.hidden_size;
  c.intermediate_size = b.intermediate_size;
  c.num_layers = b.num_layers;
  c.num_heads = b.num_heads;
  c.num_kv_heads = b.num_kv_heads;
  c.head_dim = b.hidden_size / b.num_heads;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = b.rope_theta;
  c.max_positions = b.max_positions;
  c.vocab_size = run.tokenizer->vocab_size();
  c.tie_word_embeddings = b.tie_word_embeddings;
  c.bos_token_id = run.tokenizer->bos_id();
  c.eos_token_ids = {run.tokenizer->eos_id()};
  return c;
}

// A built model starts random and, when configured, learns the world's language first
// (full-parameter pre-training); it is then saved in HF layout as the run's base model.
void build_base_model(RunContext& run) {
  const std::string dir = run.path("base_model");
  if (file_exists(dir + "/model.safetensors")) return;
  auto model = models::init_random_model(built_model_config(run), run.config.seed);
  model->to(run.device);
  if (run.config.pretrain.enabled) {
    auto pretraining = pretraining_sequences(run);
    auto& sequences = pretraining.sequences;
    say("pre-training the built model on " +
        std::to_string(sequences.size() - pretraining.reading - pretraining.drills) +
        " chunks of the world's text and " + std::to_string(pretraining.reading) +
        " reading questions answered " +
        (run.config.data.reading_sources == "prose" ? "with the documents named in words"
                                                    : "without citations") +
        (pretraining.drills ? " and " + std::to_string(pretraining.drills) + " copy drills"
                            : std::string()));
    LmTrainingJob job;
    job.stage = "pretrain";
    job.config = run.config.pretrain;
    job.sequences = &sequences;
    job.model = model;
    for (auto& item : model->named_parameters())
      job.trainable.emplace_back(item.key(), item.value());
    job.device = run.device;
    job.seed = run.config.seed;
    job.pad_id = run.tokenizer->eos_id();
    job.checkpoint_root = run.checkpoint_root();
    job.metrics_path = run.metrics_path();
    job.resume = run.config.resume == "auto";
    run_lm_training(job);
  }
  model->to(torch::kCPU);
  models::save_model(model, dir);
  // transformers' AutoTokenizer needs to be told what the tokenizer.model beside it is.
  write_file_atomically(dir + "/tokenizer_config.json",
                        models::sentencepiece_tokenizer_config(*run.tokenizer).dump(2) + "\n");
  say("saved the base model in HF layout to " + dir);
}

void load_policy(RunContext& run) {
  models::LoadOptions load;
  load.dtype = run.dtype;
  load.device = run.device;
  load.nf4 = run.config.model.quantization == "nf4";
  run.model = models::load_model(run.base_model_dir, load);
  torch::manual_seed(run.config.seed);
  run.lora.spec = {run.config.lora.r, run.config.lora.alpha, run.config.lora.dropout};
  run.lora.target_modules = run.config.lora.target_modules;
  auto adapted = models::attach_lora(run.model, run.lora);
  int64_t trainable = 0, total = 0;
  for (auto& p : run.model->parameters()) {
    total += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  say(std::string("policy: ") + (load.nf4 ? "NF4" : "dense") + " base, " +
      std::to_string(adapted.size()) + " LoRA-adapted layers (r " +
      std::to_string(run.lora.spec.r) + "), " + std::to_string(trainable) + " trainable of " +
      std::to_string(total) + " parameters");
}

// One line per selected checkpoint: where it is, its validation score and its scores on the
// other test sets; selection.json holds the intervals and every metric.
void print_selection(const RunContext& run) {
  auto fixed3 = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return std::string(buf);
  };
  const std::string path = run.path("selection.json");
  if (!file_exists(path)) return;
  const auto selection = nlohmann::json::parse(read_file(path));
  std::printf("Selected checkpoints (by %s on '%s'; details in %s):\n",
              selection.value("metric", "").c_str(), selection.value("validation", "").c_str(),
              path.c_str());
  for (const auto& s : selection.at("selected")) {
    const std::string metric = s.value("metric", ""), validation = s.value("test_set", "");
    std::string line = "  " + s.value("setting", "") + " epoch " +
                       std::to_string(s.value("epoch", 0)) + " (" + s.value("checkpoint", "") +
                       "): " + validation + " " + metric + " " + fixed3(s.value("value", 0.0));
    const auto scores = s.value("scores", nlohmann::json::object());
    for (const auto& [test_set, metrics] : scores.items())
      if (test_set != validation && metrics.contains(metric))
        line += ", " + test_set + " " + fixed3(metrics[metric].value("mean", 0.0));
    std::printf("%s\n", line.c_str());
  }
}

void print_tables(const RunContext& run) {
  TablesOptions options;
  options.metric = run.config.selection.metric;
  options.validation = run.config.selection.test_set;
  for (const auto& t : run.test_sets)  // Table 3 correlates the given-documents scores
    if (t.spec.ood && t.scenario == retrieval::Scenario::given)
      options.out_of_distribution.push_back(t.spec.name);
  if (!options.out_of_distribution.empty()) options.in_distribution = run.config.selection.test_set;
  auto tabled = table_run(run.run_dir, options);
  for (const auto& warning : tabled.plots.warnings) say("plots: " + warning);
  for (const auto& t : run.test_sets) {
    std::vector<std::string> names = {t.spec.name};  // then its corrected answers
    for (const auto& method : run.config.eval.corrections)
      names.push_back(t.spec.name + "+" + method);
    for (const auto& name : names) {
      const std::string file = run.path("tables/table2_" + name + ".md");
      if (!file_exists(file)) continue;
      const char* scenario = t.scenario == retrieval::Scenario::rtg   ? ", retrieve-then-generate"
                             : t.scenario == retrieval::Scenario::gtr ? ", generate-then-retrieve"
                                                                      : "";
      std::printf("Table 2, %s (%s%s):\n%s\n", name.c_str(),
                  t.spec.ood ? "out-of-distribution" : "in-distribution", scenario,
                  read_file(file).c_str());
    }
  }
  print_selection(run);
}

}  // namespace

int run_recipe(const RunConfig& config, const std::string& run_dir, DistRun* dist) {
  RunContext run;
  run.config = config;
  run.run_dir = run_dir;
  run.dist = dist;
  if (config.threads > 0) torch::set_num_threads(config.threads);
  if (config.device == "cuda") {
    if (!torch::cuda::is_available())
      throw Error(config.file + ": device is cuda but no CUDA device is available");
    run.device = torch::kCUDA;
  }
  run.dtype = config.model.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat32;
  run.metric_options.invalid_citations =
      rewards::parse_invalid_citations(config.invalid_citations, config.file);
  if (is_lead(run)) prepare_run_dir(config, run_dir);
  sync_ranks(run, "prepare the run directory");
  run.format.chat = models::chat_template(config.model.chat_format);
  run.format.prompt =
      data::find_prompt_template(config.data.prompt_template, config.data.templates_dir);
  // With several ranks, rank 0 makes what the run directory lacks and the others then read it.
  lead_first(run, "prepare data, tokenizer and base model", [&] {
    load_data(run);
    if (models::is_gguf_path(config.model.path)) import_gguf_base(run);
    prepare_tokenizer(run);
    if (config.model.build_enabled) build_base_model(run);
  });
  if (config.model.build_enabled)
    run.base_model_dir = run.path("base_model");
  else if (!models::is_gguf_path(config.model.path))
    run.base_model_dir = config.model.path;
  // On a CPU the NF4 base is dequantised once for the whole run (see DequantizedWeights).
  const models::DequantizedWeights dense_base(run.device.is_cpu());
  load_policy(run);
  if (is_lead(run)) {
    models::AdaptersDisabled base(run.model);
    // A base the run built is named relative to the run directory, like its checkpoints.
    evaluate_all(run, "base", 0, config.model.build_enabled ? "base_model" : run.base_model_dir);
  }
  for (const auto& setting : config.settings) {
    sync_ranks(run, "start setting " + setting);  // sft+ppo reads what rank 0 wrote for sft
    run_setting(run, setting);
  }
  if (!is_lead(run)) return 0;
  print_tables(run);
  say("done: " + run_dir);
  return 0;
}

}  // namespace citeforge::trainer
