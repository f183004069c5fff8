#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "common/file_io.h"
#include "data/bm25.h"
#include "data/prompt_template.h"
#include "data/random.h"
#include "data/synth.h"
#include "data/synth_vocab.h"
#include "tests/support/test_paths.h"

using namespace citeforge::data;
namespace fs = std::filesystem;

namespace {

// One default-sized data set shared by the read-only tests below (generation takes a moment).
const SynthDataset& default_dataset() {
  static const SynthDataset dataset = generate_synth(SynthConfig{});
  return dataset;
}

const SynthSplit& split_named(const SynthDataset& d, const std::string& name) {
  for (const auto& s : d.splits)
    if (s.name == name) return s;
  FAIL("no split " << name);
  throw;
}

std::set<int> cited_keys(const std::string& answer) {
  std::set<int> keys;
  static const std::regex re("\\[(\\d+)\\]");
  for (auto it = std::sregex_iterator(answer.begin(), answer.end(), re);
       it != std::sregex_iterator(); ++it)
    keys.insert(std::stoi((*it)[1]));
  return keys;
}

std::set<int> relevant_keys(const Example& e) {
  std::set<int> keys;
  for (const auto& s : e.sources)
    if (s.label == Label::relevant) keys.insert(s.key);
  return keys;
}

// Citation precision and recall of one answer as docs/design.md §3 defines them (numeric style,
// every cited key exists), written out here so the test does not depend on rewards/.
std::pair<double, double> precision_recall(const std::set<int>& cited, const std::set<int>& rel) {
  if (rel.empty()) return cited.empty() ? std::pair{1.0, 1.0} : std::pair{0.0, 0.0};
  if (cited.empty()) return {0.0, 0.0};
  int hits = 0;
  for (int k : cited) hits += static_cast<int>(rel.count(k));
  return {static_cast<double>(hits) / cited.size(), static_cast<double>(hits) / rel.size()};
}

std::size_t words(const std::string& text) {
  std::size_t n = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

std::set<std::string> tokens(const std::string& text) {
  auto list = bm25_tokenize(text);
  return {list.begin(), list.end()};
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::map<std::string, std::uint64_t> hash_dir(const fs::path& dir) {
  std::map<std::string, std::uint64_t> hashes;
  for (const auto& entry : fs::directory_iterator(dir))
    hashes[entry.path().filename().string()] = stable_hash64(citeforge::read_file(entry.path()));
  return hashes;
}

}  // namespace

TEST_CASE("synth: the same seed writes the same bytes, another seed different ones") {
  auto dir_a = citeforge::testing::temp_dir("synth-a");
  auto dir_b = citeforge::testing::temp_dir("synth-b");
  auto dir_c = citeforge::testing::temp_dir("synth-c");
  SynthConfig config;
  config.seed = 7;
  write_synth(generate_synth(config), dir_a.string());
  write_synth(generate_synth(config), dir_b.string());
  auto a = hash_dir(dir_a);
  CHECK(a.size() == 5);
  for (const char* name :
       {"train.jsonl", "validation.jsonl", "test.jsonl", "test_ood.jsonl", "synth_config.yaml"})
    CHECK(a.count(name));
  CHECK(a == hash_dir(dir_b));

  config.seed = 8;
  write_synth(generate_synth(config), dir_c.string());
  auto c = hash_dir(dir_c);
  CHECK(c.at("train.jsonl") != a.at("train.jsonl"));
  CHECK(c.at("test_ood.jsonl") != a.at("test_ood.jsonl"));

  // What was written reads back as the generated examples.
  auto train = read_examples_jsonl((dir_a / "train.jsonl").string());
  config.seed = 7;
  const SynthDataset regenerated = generate_synth(config);
  const auto& generated = split_named(regenerated, "train").examples;
  REQUIRE(train.size() == generated.size());
  CHECK(train[5].question == generated[5].question);
  CHECK(train[5].sources.size() == generated[5].sources.size());
  CHECK(train[5].references == generated[5].references);
  // And the resolved configuration reads back too.
  CHECK(load_synth_config((dir_a / "synth_config.yaml").string()).seed == 7);
  for (auto* d : {&dir_a, &dir_b, &dir_c}) fs::remove_all(*d);
}

TEST_CASE("synth: default split sizes, ids, origins and numeric style") {
  const auto& d = default_dataset();
  REQUIRE(d.splits.size() == 4);
  CHECK(split_named(d, "train").examples.size() == 2000);
  CHECK(split_named(d, "validation").examples.size() == 200);
  CHECK(split_named(d, "test").examples.size() == 200);
  CHECK(split_named(d, "test_ood").examples.size() == 200);
  std::set<std::string> ids;
  for (const auto& s : d.splits) {
    REQUIRE(s.facts.size() == s.examples.size());
    for (const auto& e : s.examples) {
      ids.insert(e.id);
      CHECK(e.citation_style == CitationStyle::numeric);
      CHECK(e.labels == LabelKind::gold);
      CHECK(e.origin == (s.name == "test_ood" ? "synth_ood" : "synth"));
      CHECK(e.references.count("gold"));
      CHECK(e.references.count("teacher"));
    }
  }
  CHECK(ids.size() == 2600);
  CHECK(split_named(d, "train").examples[0].id == "synth-train-00000");
}

TEST_CASE("synth: OOD topics are disjoint from training topics, entities from every ID split") {
  const auto& d = default_dataset();
  const auto& train = split_named(d, "train");
  const auto& ood = split_named(d, "test_ood");
  std::set<std::string> train_topics(train.topics.begin(), train.topics.end());
  for (const auto& t : ood.topics) CHECK_FALSE(train_topics.count(t));
  for (const auto& f : ood.facts) CHECK_FALSE(train_topics.count(f.topic));
  for (const auto& f : train.facts) CHECK(train_topics.count(f.topic));

  std::set<std::string> train_entities;
  for (const auto& f : train.facts) train_entities.insert(lower(f.entity));
  for (const char* name : {"validation", "test", "test_ood"}) {
    for (const auto& f : split_named(d, name).facts)
      CHECK_FALSE(train_entities.count(lower(f.entity)));
  }
  // No training entity is even mentioned in an OOD passage or question.
  for (const auto& e : ood.examples) {
    auto seen = tokens(e.question);
    for (const auto& s : e.sources) {
      auto more = tokens(s.text);
      seen.insert(more.begin(), more.end());
    }
    for (const auto& t : seen) REQUIRE_FALSE(train_entities.count(t));
  }
}

TEST_CASE("synth: the OOD split has a surface style training never shows") {
  const auto& d = default_dataset();
  for (const auto& e : split_named(d, "train").examples) {
    REQUIRE(e.question.rfind("Tell me, ", 0) != 0);
    for (const auto& s : e.sources) REQUIRE(s.text.find("Records show that") == std::string::npos);
  }
  int framed = 0, sources = 0;
  for (const auto& e : split_named(d, "test_ood").examples) {
    CHECK(e.question.rfind("Tell me, ", 0) == 0);
    for (const auto& s : e.sources) {
      ++sources;
      framed += s.text.find("Records show that") != std::string::npos ||
                s.text.find("It is said that") != std::string::npos ||
                s.text.find("Old notes say that") != std::string::npos;
    }
  }
  CHECK(framed == sources);
}

TEST_CASE("synth: relevant passages state the answer, the others do not") {
  const auto& d = default_dataset();
  const SynthConfig& config = d.config;
  int unanswerable = 0, total = 0;
  std::map<int, int> relevant_counts;
  for (const auto& split : d.splits) {
    for (std::size_t i = 0; i < split.examples.size(); ++i) {
      const Example& e = split.examples[i];
      const SynthFact& fact = split.facts[i];
      ++total;
      std::map<Label, int> counts;
      for (std::size_t k = 0; k < e.sources.size(); ++k) {
        const Source& s = e.sources[k];
        REQUIRE(s.key == static_cast<int>(k) + 1);
        REQUIRE_FALSE(s.name.empty());
        ++counts[s.label];
        const auto t = tokens(s.text);
        const bool states_answer = t.count(lower(fact.entity)) && t.count(lower(fact.value));
        if (s.label == Label::relevant) {
          REQUIRE(states_answer);
        } else {
          REQUIRE_FALSE(states_answer);
        }
        if (s.label == Label::irrelevant) REQUIRE_FALSE(t.count(lower(fact.entity)));
        const auto n = words(s.text);
        REQUIRE(n <= static_cast<std::size_t>(config.passage_max_words));
      }
      REQUIRE(counts[Label::irrelevant] == config.irrelevant);
      REQUIRE(counts[Label::seemingly_relevant] == config.seemingly_relevant);
      REQUIRE(counts[Label::relevant] <= config.max_relevant);
      ++relevant_counts[counts[Label::relevant]];
      // Citing correctly needs the documents: the question names the entity, not the answer.
      REQUIRE(tokens(e.question).count(lower(fact.entity)));
      REQUIRE_FALSE(tokens(e.question).count(lower(fact.value)));
      if (counts[Label::relevant] == 0) {
        ++unanswerable;
        CHECK(cited_keys(e.references.at("gold")).empty());
      } else {
        CHECK(cited_keys(e.references.at("gold")) == relevant_keys(e));
        CHECK(tokens(e.references.at("gold")).count(lower(fact.value)));
      }
    }
  }
  CHECK(static_cast<double>(unanswerable) / total == Approx(config.no_relevant_rate).margin(0.025));
  for (int n = 1; n <= 3; ++n)
    CHECK(relevant_counts[n] == Approx(total * 0.9 / 3).margin(total * 0.05));
}

TEST_CASE("synth: teacher precision and recall over train come out near the configured values") {
  const auto& d = default_dataset();
  double precision = 0, recall = 0;
  int differs_from_gold = 0;
  const auto& train = split_named(d, "train").examples;
  for (const auto& e : train) {
    auto [p, r] = precision_recall(cited_keys(e.references.at("teacher")), relevant_keys(e));
    precision += p;
    recall += r;
    differs_from_gold += e.references.at("teacher") != e.references.at("gold");
    // Gold citations are perfect.
    auto [gp, gr] = precision_recall(cited_keys(e.references.at("gold")), relevant_keys(e));
    REQUIRE(gp == 1.0);
    REQUIRE(gr == 1.0);
  }
  precision /= train.size();
  recall /= train.size();
  INFO("teacher precision " << precision << ", recall " << recall);
  CHECK(precision == Approx(0.8).margin(0.03));
  CHECK(recall == Approx(0.8).margin(0.03));
  CHECK(differs_from_gold > 200);  // the mistakes are real, not rounding
}

TEST_CASE("synth: a perfect teacher equals gold, and a weak one is measurably weaker") {
  SynthConfig config;
  config.train = 600;
  config.validation = config.test = config.test_ood = 10;
  config.teacher_precision = 1;
  config.teacher_recall = 1;
  const SynthDataset perfect = generate_synth(config);
  for (const auto& e : split_named(perfect, "train").examples)
    REQUIRE(e.references.at("teacher") == e.references.at("gold"));

  config.teacher_precision = 0.6;
  config.teacher_recall = 0.7;
  auto weak = generate_synth(config);
  double precision = 0, recall = 0;
  const auto& train = split_named(weak, "train").examples;
  for (const auto& e : train) {
    auto [p, r] = precision_recall(cited_keys(e.references.at("teacher")), relevant_keys(e));
    precision += p / train.size();
    recall += r / train.size();
  }
  CHECK(precision == Approx(0.6).margin(0.05));
  CHECK(recall == Approx(0.7).margin(0.05));
}

TEST_CASE("synth: changing the teacher leaves prompts unchanged") {
  SynthConfig a;
  a.train = 50;
  a.validation = a.test = a.test_ood = 5;
  SynthConfig b = a;
  b.teacher_precision = 0.7;
  b.teacher_recall = 0.9;
  auto da = generate_synth(a), db = generate_synth(b);
  for (std::size_t s = 0; s < da.splits.size(); ++s) {
    for (std::size_t i = 0; i < da.splits[s].examples.size(); ++i) {
      const auto& x = da.splits[s].examples[i];
      const auto& y = db.splits[s].examples[i];
      REQUIRE(x.question == y.question);
      REQUIRE(x.sources.size() == y.sources.size());
      for (std::size_t k = 0; k < x.sources.size(); ++k)
        REQUIRE(x.sources[k].text == y.sources[k].text);
      REQUIRE(x.references.at("gold") == y.references.at("gold"));
    }
  }
}

TEST_CASE("synth: a rendered rage_numeric prompt stays short and the vocabulary small") {
  const auto& d = default_dataset();
  const auto tmpl =
      load_prompt_template(citeforge::testing::source_path("configs/templates/rage_numeric.yaml"));
  // Rough token estimate: 1.3 tokens per whitespace-separated word.
  double total_tokens = 0, max_tokens = 0;
  std::set<std::string> names, vocabulary;
  std::size_t count = 0;
  for (const auto& split : d.splits) {
    for (std::size_t i = 0; i < split.examples.size(); ++i) {
      const Example& e = split.examples[i];
      const std::string text = render_prompt(tmpl, e) + " " + e.references.at("teacher");
      const double estimate = 1.3 * static_cast<double>(words(text));
      total_tokens += estimate;
      max_tokens = std::max(max_tokens, estimate);
      ++count;
      for (const auto& s : e.sources) {
        // Names ("Kalo et al., 1987, p. 12") and entities are syllable-built, not vocabulary.
        for (const auto& t : tokens(s.name)) names.insert(t);
        for (const auto& t : tokens(s.text)) vocabulary.insert(t);
      }
      for (const auto& t : tokens(text)) vocabulary.insert(t);
    }
    for (const auto& f : split.facts) names.insert(lower(f.entity));
  }
  // Entities not asked about but mentioned in passages are syllable names too.
  std::set<std::string> words_only;
  for (const auto& t : vocabulary) {
    if (names.count(t)) continue;
    bool syllabic = true;
    std::string rest = t;
    while (!rest.empty() && syllabic) {
      syllabic = false;
      for (const auto& syl : synth_syllables()) {
        if (rest.rfind(syl, 0) == 0) {
          rest = rest.substr(syl.size());
          syllabic = true;
          break;
        }
      }
    }
    if (!syllabic || !rest.empty()) words_only.insert(t);
  }
  const double mean = total_tokens / count;
  INFO("mean estimated tokens " << mean << ", max " << max_tokens << ", words "
                                << words_only.size());
  CHECK(mean >= 100);
  CHECK(mean <= 200);
  CHECK(max_tokens <= 250);
  CHECK(words_only.size() < 400);
}

TEST_CASE("synth: invalid configurations are rejected with the key") {
  SynthConfig c;
  c.max_relevant = 4;
  CHECK_THROWS_WITH(generate_synth(c), Catch::Contains("max_relevant"));
  c = SynthConfig{};
  c.ood_topics = {"bird"};
  CHECK_THROWS_WITH(generate_synth(c), Catch::Contains("ood_topics") && Catch::Contains("bird"));
  c = SynthConfig{};
  c.id_topics = {"unicorn", "bird"};
  CHECK_THROWS_WITH(generate_synth(c), Catch::Contains("unknown topic 'unicorn'"));
  c = SynthConfig{};
  c.teacher_precision = 1.0;
  c.teacher_recall = 0.2;  // dropping citations without adding wrong ones lowers precision too
  CHECK_THROWS_WITH(generate_synth(c), Catch::Contains("cannot both be reached"));
}

TEST_CASE("synth: the pretrain split is reading material about entities no other split has") {
  SynthConfig config;
  config.train = 100;
  config.validation = 20;
  config.test = 20;
  config.test_ood = 20;
  config.pretrain = 3000;
  auto d = generate_synth(config);
  REQUIRE(d.splits.size() == 5);
  const auto& pretrain = split_named(d, "pretrain");
  CHECK(pretrain.examples.size() == 3000);
  CHECK(pretrain.examples.front().split == "pretrain");
  std::set<std::string> reading;
  for (const auto& f : pretrain.facts) reading.insert(lower(f.entity));
  CHECK(reading.size() > 500);  // many distinct entities, so copying beats memorising
  for (const char* name : {"train", "validation", "test", "test_ood"})
    for (const auto& f : split_named(d, name).facts) CHECK_FALSE(reading.count(lower(f.entity)));
  // Without it, no pretrain split is made.
  config.pretrain = 0;
  CHECK(generate_synth(config).splits.size() == 4);
}

TEST_CASE("synth: questions_per_entity 1 gives every question an entity of its own") {
  SynthConfig config;
  config.train = 300;
  config.validation = config.test = config.test_ood = 20;
  auto count_subjects = [](const SynthSplit& split) {
    std::map<std::string, int> asked;
    for (const auto& f : split.facts) ++asked[lower(f.entity)];
    return asked;
  };
  // By default an entity is asked about all its attributes, so training repeats entities.
  int repeated = 0;
  for (const auto& [entity, n] : count_subjects(split_named(generate_synth(config), "train")))
    repeated += n > 1;
  CHECK(repeated > 30);
  config.questions_per_entity = 1;
  auto d = generate_synth(config);
  const auto& train = split_named(d, "train");
  REQUIRE(train.examples.size() == 300);
  for (const auto& [entity, n] : count_subjects(train)) CHECK(n == 1);
  // Still answerable from relevant passages, with same-entity distractors about other facts.
  for (const auto& ex : train.examples) CHECK(ex.sources.size() >= 3);
  config.questions_per_entity = -1;
  CHECK_THROWS_WITH(generate_synth(config), Catch::Contains("questions_per_entity"));
}
