#include "trainer/recipe/run_data.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "common/error.h"
#include "common/file_io.h"
#include "data/random.h"
#include "data/synsciqa.h"
#include "data/synth.h"
#include "models/checkpoint_io.h"
#include "trainer/distributed/dist_run.h"
#include "trainer/run/progress.h"

namespace citeforge::trainer {
namespace {

std::string resolve_data_path(const RunSetup& setup, const std::string& path) {
  if (path.rfind("synth:", 0) == 0)
    return data::synth_split_path(setup.dir.data_dir(), path.substr(6));
  return path;
}

// Examples from a data path of the config (see TestSetSpec): JSONL, the generated world, or a
// SynSciQA file imported on the fly (what it could not parse is reported, never dropped
// silently).
std::vector<data::Example> read_data(const RunSetup& setup, const std::string& path,
                                     const std::string& golden) {
  if (!is_synsciqa_path(path)) return data::read_examples_jsonl(resolve_data_path(setup, path));
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

}  // namespace

void load_data(const RunSetup& setup, RunData& run_data) {
  const auto& c = setup.config;
  if (c.data.synth_enabled && !file_exists(data::synth_config_path(setup.dir.data_dir()))) {
    say("generating the synthetic citation world into " + setup.dir.data_dir());
    data::write_synth(data::generate_synth(c.data.synth), setup.dir.data_dir());
  }
  run_data.train = read_data(setup, c.data.train, c.data.train_golden);
  const std::string holdout_file = setup.dir.holdout();
  std::vector<data::Example> holdout;
  if (c.data.holdout > 0) {
    holdout = hold_out(run_data.train, c.data.holdout, split_seed(c), c.file);
    // Written for reading and for `score`; every rank draws the same split from the seed.
    if (is_lead(setup)) {
      std::filesystem::create_directories(setup.dir.data_dir());
      data::write_examples_jsonl(holdout_file, holdout);
    }
  }
  if (c.data.synth_enabled && c.data.synth.pretrain > 0 && c.pretrain.enabled &&
      !models::has_model_weights(setup.dir.base_model()))
    run_data.pretrain_reading =
        data::read_examples_jsonl(data::synth_split_path(setup.dir.data_dir(), "pretrain"));
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
    t.examples = held ? holdout : read_data(setup, spec.path, spec.golden);
    t.spec.path = held ? holdout_file : resolve_data_path(setup, spec.path);
    // The retrieval corpus is the whole file's sources, not the sample's: a retriever faces
    // every passage the data set has.
    std::shared_ptr<const retrieval::Corpus> corpus;
    if (!c.eval.scenarios.empty() && spec.name != c.selection.test_set)
      corpus = std::make_shared<retrieval::Corpus>(retrieval::corpus_from_examples(t.examples));
    if (spec.sample > 0)
      t.examples = seeded_subset(t.examples, spec.sample, split_seed(c), spec.name);
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
    run_data.test_sets.push_back(std::move(t));
  }
  for (auto& t : in_scenarios) run_data.test_sets.push_back(std::move(t));
  std::string sizes;
  for (const auto& t : run_data.test_sets)
    sizes += ", " + t.spec.name + " " + std::to_string(t.examples.size()) +
             (t.spec.sample > 0 ? " (seeded sample)" : "") +
             (t.spec.path == holdout_file ? " (held out of train)" : "") +
             (t.corpus ? " (BM25 top " + std::to_string(c.eval.retrieval_k) + " of " +
                             std::to_string(t.corpus->passages.size()) + " passages)"
                       : "");
  say("data: train " + std::to_string(run_data.train.size()) + sizes);
}

}  // namespace citeforge::trainer
