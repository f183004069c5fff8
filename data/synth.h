// The synthetic citation world (docs/design.md §2): a complete RAGE-style data set made from a
// seed, with no external input. Topics hold entities with facts; each question asks one fact; its
// relevant passages state that fact (in 1-3 wordings), seemingly relevant passages share the
// topic, entity or attribute but not the answer, irrelevant passages come from other topics.
// A rule-based teacher writes short answers with [n] citations whose precision and recall are
// set by the configuration, so SFT inherits its mistakes and PPO has something to win.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/example.h"

namespace YAML {
class Node;
}

namespace citeforge::data {

struct SynthConfig {
  std::uint64_t seed = 1;
  // Examples per split. test_ood uses unseen topics and the OOD surface style.
  int train = 2000;
  int validation = 200;
  int test = 200;
  int test_ood = 200;
  // Extra in-distribution examples with entities of their own, written as pretrain.jsonl when
  // > 0: unlabelled reading material for pre-training a model the run builds (their prompts,
  // never their answers). Many distinct entities force a small model to learn to copy from its
  // context instead of memorising the training entities.
  int pretrain = 0;
  // The document mixture per question (RAGE §3.2); kept below RAGE's 3 + 3 so a prompt stays
  // around 100-200 tokens for a tiny model.
  int min_relevant = 1;
  int max_relevant = 3;
  int irrelevant = 2;
  int seemingly_relevant = 2;
  double no_relevant_rate = 0.1;  // share of questions no document answers
  // How many of an entity's facts a split asks about; 0 asks them all (an entity per topic
  // attribute count of questions). 1 gives every question an entity of its own, so a model
  // cannot memorise a training entity's facts from the other questions about it and must
  // read them from the documents each time, as it must for the unseen entities of the tests.
  int questions_per_entity = 0;
  // Passage length in words: neutral filler sentences pad a statement up to min_words without
  // passing max_words.
  int passage_min_words = 8;
  int passage_max_words = 16;
  // Target citation precision / recall of the `teacher` reference (docs/design.md §3 definitions,
  // averaged over examples). The teacher drops each relevant citation with one probability and
  // adds a wrong one with another (data/synth_teacher.h); an example whose citations are all
  // dropped scores precision 0, so a low recall caps precision (recall 0.6 allows at most about
  // 0.78). Unreachable pairs are an error that names the closest reachable pair.
  double teacher_precision = 0.8;
  double teacher_recall = 0.8;
  std::vector<std::string> id_topics;   // empty: default_id_topics()
  std::vector<std::string> ood_topics;  // empty: default_ood_topics()
};

// Throws citeforge::Error naming the offending key.
void validate_synth_config(const SynthConfig& config);

// Reads a YAML mapping (every key optional, unknown keys are errors):
//   seed, train, validation, test, test_ood, min_relevant, max_relevant, irrelevant,
//   seemingly_relevant, no_relevant_rate, passage_min_words, passage_max_words,
//   teacher_precision, teacher_recall, id_topics, ood_topics.
// `file` and `key_prefix` (e.g. "synth.") only decorate error messages.
SynthConfig synth_config_from_yaml(const YAML::Node& node, const std::string& file,
                                   const std::string& key_prefix = "");
SynthConfig load_synth_config(const std::string& path);
// The resolved configuration (defaults filled in) as YAML text that load_synth_config reads back.
std::string synth_config_to_yaml(const SynthConfig& config);

// What the generator knows about one example beyond the Example itself.
struct SynthFact {
  std::string topic;
  std::string entity;
  std::string attribute;
  std::string value;  // the true answer, also when no document states it
};

struct SynthSplit {
  std::string name;  // "train", "validation", "test", "test_ood" (and "pretrain")
  std::vector<std::string> topics;
  std::vector<Example> examples;
  std::vector<SynthFact> facts;  // parallel to examples
};

struct SynthDataset {
  SynthConfig config;       // with topic lists filled in
  double teacher_keep = 1;  // calibrated: probability the teacher keeps a relevant citation
  double teacher_add = 0;   // calibrated: probability it adds one wrong citation
  std::vector<SynthSplit> splits;
};

// Every key of a SynthConfig, spelled once: `v.field(name, member)` for each. The YAML reader
// and writer here and the run config's `data.synth` section all go through it.
template <class V>
void visit_synth_fields(V& v, SynthConfig& s) {
  v.field("seed", s.seed);
  v.field("train", s.train);
  v.field("validation", s.validation);
  v.field("test", s.test);
  v.field("test_ood", s.test_ood);
  v.field("pretrain", s.pretrain);
  v.field("min_relevant", s.min_relevant);
  v.field("max_relevant", s.max_relevant);
  v.field("irrelevant", s.irrelevant);
  v.field("seemingly_relevant", s.seemingly_relevant);
  v.field("no_relevant_rate", s.no_relevant_rate);
  v.field("questions_per_entity", s.questions_per_entity);
  v.field("passage_min_words", s.passage_min_words);
  v.field("passage_max_words", s.passage_max_words);
  v.field("teacher_precision", s.teacher_precision);
  v.field("teacher_recall", s.teacher_recall);
  v.field("id_topics", s.id_topics);
  v.field("ood_topics", s.ood_topics);
}

// Generates the whole data set; same config (seed included) gives the same data.
SynthDataset generate_synth(const SynthConfig& config);

// Writes <split>.jsonl for every split and synth_config.yaml into `dir` (created if missing).
void write_synth(const SynthDataset& dataset, const std::string& dir);
// Where write_synth puts a split ("train", "pretrain", ...) and the world's config.
std::string synth_split_path(const std::string& dir, const std::string& split);
std::string synth_config_path(const std::string& dir);

}  // namespace citeforge::data
