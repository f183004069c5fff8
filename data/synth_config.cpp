// SynthConfig: validation and YAML (the generator itself is in synth.cpp).
#include <charconv>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/file_io.h"
#include "common/number_text.h"
#include "common/yaml_fields.h"
#include "data/synth.h"
#include "data/synth_vocab.h"

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
  struct Reader {
    const YAML::Node& node;
    const std::string& file;
    const std::string& prefix;
    std::set<std::string> known;
    YamlPlace place(const std::string& key) const { return {file, prefix + key}; }
    void field(const char* key, std::uint64_t& out) {
      known.insert(key);
      if (node[key]) out = yaml_unsigned(node[key], place(key));
    }
    void field(const char* key, int& out) {
      known.insert(key);
      if (node[key]) out = to_int(yaml_integer(node[key], place(key)), node[key], place(key));
    }
    void field(const char* key, double& out) {
      known.insert(key);
      if (node[key]) out = yaml_number(node[key], place(key));
    }
    void field(const char* key, std::vector<std::string>& out) {
      known.insert(key);
      if (node[key]) out = yaml_string_list(node[key], place(key));
    }
  } reader{node, file, key_prefix, {}};
  SynthConfig keys;
  visit_synth_fields(reader, keys);  // collects the key names
  require_known_keys(node, reader.known, file, key_prefix);
  visit_synth_fields(reader, c);
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

std::string synth_config_to_yaml(const SynthConfig& config) {
  SynthConfig c = config;
  if (c.id_topics.empty()) c.id_topics = default_id_topics();
  if (c.ood_topics.empty()) c.ood_topics = default_ood_topics();
  struct Writer {
    std::ostringstream out;
    void field(const char* key, std::uint64_t v) { out << key << ": " << v << "\n"; }
    void field(const char* key, int v) { out << key << ": " << v << "\n"; }
    void field(const char* key, double v) { out << key << ": " << number_text(v) << "\n"; }
    void field(const char* key, const std::vector<std::string>& v) {
      out << key << ": " << yaml_list(v) << "\n";
    }
  } writer;
  writer.out << "# Synthetic citation world (citeforge data synth); every key is optional.\n";
  visit_synth_fields(writer, c);
  return writer.out.str();
}

}  // namespace citeforge::data
