// SynthConfig: validation and YAML (the generator itself is in synth.cpp).
#include <charconv>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/file_io.h"
#include "data/synth.h"
#include "data/synth_vocab.h"
#include "data/yaml_fields.h"

namespace citeforge::data {

namespace {

void require(bool ok, const std::string& key, const std::string& what) {
  if (!ok) throw Error("synth config: " + key + ": " + what);
}

void check_topics(const std::vector<std::string>& names, const std::string& key) {
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!find_synth_topic(name)) {
      std::string known;
      for (const SynthTopic& topic : synth_topics())
        known += (known.empty() ? "" : ", ") + topic.name;
      require(false, key, "unknown topic '" + name + "' (known: " + known + ")");
    }
    require(seen.insert(name).second, key, "topic '" + name + "' listed twice");
  }
}

int to_int(long long value, const YAML::Node& node, const YamlPlace& place) {
  if (value < -1000000000LL || value > 1000000000LL) yaml_fail(node, place, "out of range");
  return static_cast<int>(value);
}

// Shortest text that reads back as the same double (0.1 stays "0.1").
std::string number_text(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string yaml_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

}  // namespace

void validate_synth_config(const SynthConfig& c) {
  require(c.train >= 0 && c.validation >= 0 && c.test >= 0 && c.test_ood >= 0 && c.pretrain >= 0,
          "train/validation/test/test_ood/pretrain", "split sizes must be >= 0");
  require(c.min_relevant >= 0, "min_relevant", "must be >= 0");
  require(c.max_relevant >= c.min_relevant, "max_relevant", "must be >= min_relevant");
  require(c.max_relevant <= 3, "max_relevant", "at most 3 (one per statement wording)");
  require(c.irrelevant >= 0, "irrelevant", "must be >= 0");
  require(c.seemingly_relevant >= 0, "seemingly_relevant", "must be >= 0");
  require(c.no_relevant_rate >= 0 && c.no_relevant_rate <= 1, "no_relevant_rate",
          "must be in [0, 1]");
  require(c.questions_per_entity >= 0, "questions_per_entity", "must be >= 0 (0: all facts)");
  require(c.passage_min_words >= 1, "passage_min_words", "must be >= 1");
  require(c.passage_max_words >= c.passage_min_words, "passage_max_words",
          "must be >= passage_min_words");
  require(c.teacher_precision >= 0 && c.teacher_precision <= 1, "teacher_precision",
          "must be in [0, 1]");
  require(c.teacher_recall >= 0 && c.teacher_recall <= 1, "teacher_recall", "must be in [0, 1]");
  require(c.teacher_precision >= 1 || c.irrelevant + c.seemingly_relevant > 0, "teacher_precision",
          "below 1 needs irrelevant or seemingly relevant documents");
  const auto& id = c.id_topics.empty() ? default_id_topics() : c.id_topics;
  const auto& ood = c.ood_topics.empty() ? default_ood_topics() : c.ood_topics;
  check_topics(id, "id_topics");
  check_topics(ood, "ood_topics");
  for (const std::string& name : ood) {
    for (const std::string& other : id)
      require(name != other, "ood_topics", "topic '" + name + "' is also in id_topics");
  }
  // Irrelevant passages come from other topics of the same split.
  require(c.irrelevant == 0 || id.size() >= 2, "id_topics",
          "need at least 2 topics for irrelevant passages");
  require(c.irrelevant == 0 || c.test_ood == 0 || ood.size() >= 2, "ood_topics",
          "need at least 2 topics for irrelevant passages");
}

SynthConfig synth_config_from_yaml(const YAML::Node& node, const std::string& file,
                                   const std::string& key_prefix) {
  SynthConfig c;
  if (!node || node.IsNull()) return c;
  require_known_keys(node,
                     {"seed", "train", "validation", "test", "test_ood", "pretrain", "min_relevant",
                      "max_relevant", "irrelevant", "seemingly_relevant", "no_relevant_rate",
                      "questions_per_entity", "passage_min_words", "passage_max_words",
                      "teacher_precision", "teacher_recall", "id_topics", "ood_topics"},
                     file, key_prefix);
  auto place = [&](const std::string& key) { return YamlPlace{file, key_prefix + key}; };
  auto read_int = [&](const char* key, int& out) {
    if (node[key]) out = to_int(yaml_integer(node[key], place(key)), node[key], place(key));
  };
  auto read_double = [&](const char* key, double& out) {
    if (node[key]) out = yaml_number(node[key], place(key));
  };
  if (node["seed"]) c.seed = yaml_unsigned(node["seed"], place("seed"));
  read_int("train", c.train);
  read_int("validation", c.validation);
  read_int("test", c.test);
  read_int("test_ood", c.test_ood);
  read_int("pretrain", c.pretrain);
  read_int("min_relevant", c.min_relevant);
  read_int("max_relevant", c.max_relevant);
  read_int("irrelevant", c.irrelevant);
  read_int("seemingly_relevant", c.seemingly_relevant);
  read_double("no_relevant_rate", c.no_relevant_rate);
  read_int("questions_per_entity", c.questions_per_entity);
  read_int("passage_min_words", c.passage_min_words);
  read_int("passage_max_words", c.passage_max_words);
  read_double("teacher_precision", c.teacher_precision);
  read_double("teacher_recall", c.teacher_recall);
  if (node["id_topics"]) c.id_topics = yaml_string_list(node["id_topics"], place("id_topics"));
  if (node["ood_topics"]) c.ood_topics = yaml_string_list(node["ood_topics"], place("ood_topics"));
  try {
    validate_synth_config(c);
  } catch (const Error& e) {
    throw Error(located(file, "", e.what()));
  }
  return c;
}

SynthConfig load_synth_config(const std::string& path) {
  return synth_config_from_yaml(parse_yaml_text(read_file(path), path), path);
}

std::string synth_config_to_yaml(const SynthConfig& c) {
  std::ostringstream out;
  out << "# Synthetic citation world (citeforge data synth); every key is optional.\n"
      << "seed: " << c.seed << "\n"
      << "train: " << c.train << "\n"
      << "validation: " << c.validation << "\n"
      << "test: " << c.test << "\n"
      << "test_ood: " << c.test_ood << "\n"
      << "pretrain: " << c.pretrain << "\n"
      << "min_relevant: " << c.min_relevant << "\n"
      << "max_relevant: " << c.max_relevant << "\n"
      << "irrelevant: " << c.irrelevant << "\n"
      << "seemingly_relevant: " << c.seemingly_relevant << "\n"
      << "no_relevant_rate: " << number_text(c.no_relevant_rate) << "\n"
      << "questions_per_entity: " << c.questions_per_entity << "\n"
      << "passage_min_words: " << c.passage_min_words << "\n"
      << "passage_max_words: " << c.passage_max_words << "\n"
      << "teacher_precision: " << number_text(c.teacher_precision) << "\n"
      << "teacher_recall: " << number_text(c.teacher_recall) << "\n"
      << "id_topics: " << yaml_list(c.id_topics.empty() ? default_id_topics() : c.id_topics) << "\n"
      << "ood_topics: " << yaml_list(c.ood_topics.empty() ? default_ood_topics() : c.ood_topics)
      << "\n";
  return out.str();
}

}  // namespace citeforge::data
