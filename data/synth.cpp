// The generator of the synthetic citation world; see synth.h for what it makes and why.
#include "data/synth.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/file_io.h"
#include "data/mixture.h"
#include "data/random.h"
#include "data/synth_teacher.h"
#include "data/synth_vocab.h"

namespace citeforge::data {

namespace {

struct Entity {
  std::string name;
  std::vector<std::size_t> values;  // value index per attribute of its topic
};

// The part of the world one split sees: its topics, their entities and the surface style.
struct SplitWorld {
  std::string name;
  bool ood = false;
  std::vector<const SynthTopic*> topics;
  std::vector<std::vector<Entity>> entities;  // per topic
};

struct FactRef {
  std::size_t topic = 0;
  std::size_t entity = 0;
  std::size_t attribute = 0;
};

// A candidate passage before the mixture picks from it.
struct Passage {
  std::string text;
  std::string name;
  FactRef fact;
};

std::size_t word_count(const std::string& text) {
  std::istringstream in(text);
  std::size_t n = 0;
  for (std::string word; in >> word;) ++n;
  return n;
}

std::string capitalized(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

// Every lower-cased word of the built-in vocabulary: entity names must not collide with them.
std::set<std::string> vocabulary_words() {
  std::set<std::string> words;
  auto add = [&](const std::string& text) {
    std::string word;
    for (char c : text + " ") {
      if (std::isalpha(static_cast<unsigned char>(c))) {
        word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else if (!word.empty()) {
        words.insert(word);
        word.clear();
      }
    }
  };
  for (const SynthTopic& topic : synth_topics()) {
    add(topic.name);
    for (const SynthAttribute& a : topic.attributes) {
      for (const auto& v : a.values) add(v);
      for (const auto& s : a.statements) add(s);
      add(a.question);
      add(a.answer);
    }
  }
  for (bool ood : {false, true}) {
    const SynthStyle& style = synth_style(ood);
    for (const auto& f : style.fillers) add(f);
    for (const auto& f : style.statement_frames) add(f);
    add(style.question_frame);
    add(style.answer_frame);
    add(style.abstain);
  }
  return words;
}

class NameMaker {
 public:
  explicit NameMaker(std::uint64_t seed) : rng_(derive_seed(seed, "names")) {}

  // A new name of 2-3 syllables, unique in the world and not an English word of the templates.
  std::string entity() {
    for (int attempt = 0; attempt < 100000; ++attempt) {
      std::string name = make(uniform_int(rng_, 2, 3));
      if (!reserved_.count(name) && used_.insert(name).second) return capitalized(name);
    }
    throw Error("synth: ran out of entity names; reduce the split sizes");
  }

  bool is_entity(const std::string& name) const {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return used_.count(lower) > 0;
  }

  // An author for a source name; never equal to an entity so named citations stay unambiguous.
  // Two syllables while free ones are easy to find; a large world can use up nearly all
  // two-syllable names as entities, and then authors get longer names instead of looping.
  std::string author(Rng& rng) const {
    for (int syllables = 2; syllables <= 4; ++syllables)
      for (int attempt = 0; attempt < 200; ++attempt) {
        std::string name = make(syllables, rng);
        if (!used_.count(name)) return capitalized(name);
      }
    throw Error("synth: ran out of author names; reduce the split sizes");
  }

 private:
  std::string make(int syllables) { return make(syllables, rng_); }
  static std::string make(int syllables, Rng& rng) {
    std::string name;
    for (int i = 0; i < syllables; ++i) name += pick(synth_syllables(), rng);
    return name;
  }

  Rng rng_;
  std::set<std::string> used_;
  std::set<std::string> reserved_ = vocabulary_words();
};

// How many of an entity's `attributes` facts a split asks (questions_per_entity; 0: all).
std::size_t facts_asked_per_entity(int questions_per_entity, std::size_t attributes) {
  return questions_per_entity > 0
             ? std::min<std::size_t>(attributes, static_cast<std::size_t>(questions_per_entity))
             : attributes;
}

// Entities per topic so a split of `count` questions can ask distinct facts, as many per entity
// as facts_asked_per_entity allows, plus a few spare entities so every question has
// same-attribute distractors.
std::size_t entities_per_topic(int count, std::size_t topics, std::size_t attributes,
                               int questions_per_entity) {
  const std::size_t per_entity = facts_asked_per_entity(questions_per_entity, attributes);
  const std::size_t per_topic = (static_cast<std::size_t>(count) + topics - 1) / topics;
  return std::max<std::size_t>(4, (per_topic + per_entity - 1) / per_entity + 3);
}

SplitWorld make_split_world(const std::string& name, bool ood, int count, int questions_per_entity,
                            const std::vector<std::string>& topic_names, NameMaker& names,
                            Rng& world_rng) {
  SplitWorld world;
  world.name = name;
  world.ood = ood;
  for (const std::string& topic_name : topic_names) {
    const SynthTopic* topic = find_synth_topic(topic_name);
    world.topics.push_back(topic);
    std::vector<Entity> entities(entities_per_topic(
        count, topic_names.size(), topic->attributes.size(), questions_per_entity));
    for (Entity& entity : entities) {
      entity.name = names.entity();
      for (const SynthAttribute& attribute : topic->attributes)
        entity.values.push_back(uniform_below(world_rng, attribute.values.size()));
    }
    world.entities.push_back(std::move(entities));
  }
  return world;
}

const SynthAttribute& attribute_of(const SplitWorld& world, const FactRef& f) {
  return world.topics[f.topic]->attributes[f.attribute];
}

const std::string& value_of(const SplitWorld& world, const FactRef& f) {
  const Entity& entity = world.entities[f.topic][f.entity];
  return attribute_of(world, f).values[entity.values[f.attribute]];
}

const std::string& entity_of(const SplitWorld& world, const FactRef& f) {
  return world.entities[f.topic][f.entity].name;
}

// One passage stating fact `f` in wording `wording`, framed and padded per the split's style.
Passage make_passage(const SplitWorld& world, const FactRef& f, std::size_t wording,
                     const SynthConfig& config, const NameMaker& names, Rng& rng) {
  const SynthStyle& style = synth_style(world.ood);
  const std::string& entity = entity_of(world, f);
  const SynthAttribute& attribute = attribute_of(world, f);
  std::string text =
      apply_frame(pick(style.statement_frames, rng), "{s}",
                  fill_fact(attribute.statements[wording], entity, value_of(world, f)), entity);
  std::vector<std::string> fillers = style.fillers;
  shuffle_in_place(fillers, rng);
  std::size_t words = word_count(text);
  for (const std::string& filler_pattern : fillers) {
    if (words >= static_cast<std::size_t>(config.passage_min_words)) break;
    const std::string filler = fill_fact(filler_pattern, entity, "");
    const std::size_t filler_words = word_count(filler);
    if (words + filler_words > static_cast<std::size_t>(config.passage_max_words)) continue;
    text = style.fillers_first ? filler + " " + text : text + " " + filler;
    words += filler_words;
  }
  Passage passage;
  passage.text = text;
  passage.fact = f;
  passage.name = names.author(rng) + (bernoulli(rng, 0.5) ? " et al." : "") + ", " +
                 std::to_string(uniform_int(rng, 1950, 2023)) + ", p. " +
                 std::to_string(uniform_int(rng, 1, 300));
  return passage;
}

// "The X has red feathers." + keys {2, 5} -> "The X has red feathers [2][5]."
std::string with_citations(const std::string& sentence, const std::vector<int>& keys) {
  if (keys.empty()) return sentence;
  std::string body = sentence;
  std::string end;
  if (!body.empty() && body.back() == '.') {
    body.pop_back();
    end = ".";
  }
  body += " ";
  for (int key : keys) {  // appended piece by piece: GCC 12 warns falsely on "[" + s + "]"
    body += '[';
    body += std::to_string(key);
    body += ']';
  }
  return body + end;
}

std::string answer_sentence(const SplitWorld& world, const FactRef& f, const std::string& value) {
  const std::string& entity = entity_of(world, f);
  return apply_frame(synth_style(world.ood).answer_frame, "{a}",
                     fill_fact(attribute_of(world, f).answer, entity, value), entity);
}

std::string zero_padded(std::size_t n, int width) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%0*zu", width, n);
  return buffer;
}

struct ExampleContext {
  const SynthConfig& config;
  const SplitWorld& world;
  const NameMaker& names;
  const TeacherPlan& teacher;
};

Example make_example(const ExampleContext& ctx, const std::string& id, const FactRef& fact) {
  const SynthConfig& config = ctx.config;
  const SplitWorld& world = ctx.world;
  const SynthStyle& style = synth_style(world.ood);
  const SynthAttribute& attribute = attribute_of(world, fact);

  // Content draws (passages, distractors) and teacher draws use their own streams, and the
  // mixture a third, so changing the teacher's rates leaves prompts untouched.
  Rng rng(derive_seed(config.seed, id + "#content"));
  const bool unanswerable = bernoulli(rng, config.no_relevant_rate);

  std::vector<Passage> passages;
  MixturePools pools;
  auto add = [&](Passage passage, std::vector<std::string>& pool) {
    pool.push_back("p" + std::to_string(passages.size()));
    passages.push_back(std::move(passage));
  };
  // A distractor states its fact in a randomly chosen wording.
  auto distractor = [&](const FactRef& other) {
    const std::size_t wordings = attribute_of(world, other).statements.size();
    return make_passage(world, other, uniform_below(rng, wordings), config, ctx.names, rng);
  };
  if (!unanswerable) {
    for (std::size_t wording : sample_indices(rng, attribute.statements.size(),
                                              static_cast<std::size_t>(config.max_relevant)))
      add(make_passage(world, fact, wording, config, ctx.names, rng), pools.relevant);
  }
  // Seemingly relevant: the same entity's other attributes, and the same attribute of other
  // entities of the topic. Both overlap the question lexically but do not answer it.
  const std::size_t pool_size = std::max<std::size_t>(2, 2 * config.seemingly_relevant);
  for (std::size_t b = 0; b < world.topics[fact.topic]->attributes.size(); ++b) {
    if (b == fact.attribute) continue;
    FactRef other{fact.topic, fact.entity, b};
    add(distractor(other), pools.seemingly_relevant);
  }
  const std::size_t peers = world.entities[fact.topic].size() - 1;
  for (std::size_t i : sample_indices(rng, peers, pool_size)) {
    FactRef other{fact.topic, i < fact.entity ? i : i + 1, fact.attribute};
    add(distractor(other), pools.seemingly_relevant);
  }
  // Irrelevant: any fact of another topic of this split.
  const std::size_t irrelevant_pool = std::max<std::size_t>(2, 2 * config.irrelevant);
  for (std::size_t i = 0; i < irrelevant_pool && world.topics.size() > 1; ++i) {
    std::size_t topic = uniform_below(rng, world.topics.size() - 1);
    if (topic >= fact.topic) ++topic;
    FactRef other{topic, uniform_below(rng, world.entities[topic].size()),
                  uniform_below(rng, world.topics[topic]->attributes.size())};
    add(distractor(other), pools.irrelevant);
  }

  MixtureConfig mixture;
  mixture.min_relevant = config.min_relevant;
  mixture.max_relevant = config.max_relevant;
  mixture.irrelevant = config.irrelevant;
  mixture.seemingly_relevant = config.seemingly_relevant;
  mixture.seed = config.seed;

  Example example;
  example.id = id;
  example.origin = world.ood ? "synth_ood" : "synth";
  example.split = world.ood ? "test" : world.name;
  example.question = apply_frame(style.question_frame, "{q}",
                                 fill_fact(attribute.question, entity_of(world, fact), ""),
                                 entity_of(world, fact));
  example.citation_style = CitationStyle::numeric;
  example.labels = LabelKind::gold;

  std::vector<TeacherSource> teacher_view;
  std::vector<std::size_t> source_passage;  // passage index per source
  std::vector<int> gold_keys;
  for (const MixtureDoc& doc : build_mixture(id, pools, mixture)) {
    source_passage.push_back(std::stoul(doc.doc_id.substr(1)));
    const Passage& passage = passages[source_passage.back()];
    Source source;
    source.key = static_cast<int>(example.sources.size()) + 1;
    source.name = passage.name;
    source.text = passage.text;
    source.label = doc.label;
    if (doc.label == Label::relevant) gold_keys.push_back(source.key);
    example.sources.push_back(std::move(source));
    teacher_view.push_back({doc.label, passage.fact.topic == fact.topic &&
                                           passage.fact.attribute == fact.attribute &&
                                           passage.fact.entity != fact.entity});
  }
  std::sort(gold_keys.begin(), gold_keys.end());
  const std::string truth = answer_sentence(world, fact, value_of(world, fact));
  example.references["gold"] = gold_keys.empty() ? style.abstain : with_citations(truth, gold_keys);

  Rng teacher_rng(derive_seed(config.seed, id + "#teacher"));
  TeacherChoice choice = teacher_citations(teacher_view, ctx.teacher, teacher_rng);
  if (choice.abstain) {
    example.references["teacher"] = style.abstain;
  } else if (gold_keys.empty()) {
    // Answering an unanswerable question: copy the value of the wrong document when it states
    // the asked attribute (another entity's), else make one up.
    const FactRef& wrong =
        passages[source_passage[static_cast<std::size_t>(choice.wrong_key) - 1]].fact;
    const bool states_attribute = wrong.topic == fact.topic && wrong.attribute == fact.attribute;
    const std::string value =
        states_attribute ? value_of(world, wrong) : pick(attribute.values, teacher_rng);
    example.references["teacher"] =
        with_citations(answer_sentence(world, fact, value), choice.keys);
  } else {
    example.references["teacher"] = with_citations(truth, choice.keys);
  }
  return example;
}

SynthSplit make_split(const SynthConfig& config, const SplitWorld& world, int count,
                      const NameMaker& names, const TeacherPlan& teacher) {
  SynthSplit split;
  split.name = world.name;
  for (const SynthTopic* topic : world.topics) split.topics.push_back(topic->name);
  std::vector<FactRef> facts;
  Rng rng(derive_seed(config.seed, "facts/" + world.name));
  for (std::size_t t = 0; t < world.topics.size(); ++t)
    for (std::size_t e = 0; e < world.entities[t].size(); ++e) {
      const std::size_t attributes = world.topics[t]->attributes.size();
      std::vector<std::size_t> asked(attributes);
      for (std::size_t a = 0; a < attributes; ++a) asked[a] = a;
      const std::size_t kept = facts_asked_per_entity(config.questions_per_entity, attributes);
      if (kept < attributes) {  // asking all draws nothing, so default worlds stay as they were
        shuffle_in_place(asked, rng);
        asked.resize(kept);
      }
      for (std::size_t a : asked) facts.push_back({t, e, a});
    }
  shuffle_in_place(facts, rng);
  ExampleContext ctx{config, world, names, teacher};
  for (int i = 0; i < count; ++i) {
    const FactRef& fact = facts[static_cast<std::size_t>(i) % facts.size()];
    const std::string id =
        "synth-" + world.name + "-" + zero_padded(static_cast<std::size_t>(i), 5);
    split.examples.push_back(make_example(ctx, id, fact));
    split.facts.push_back({world.topics[fact.topic]->name, entity_of(world, fact),
                           attribute_of(world, fact).name, value_of(world, fact)});
  }
  return split;
}

}  // namespace

SynthDataset generate_synth(const SynthConfig& input) {
  validate_synth_config(input);
  SynthDataset dataset;
  dataset.config = input;
  SynthConfig& config = dataset.config;
  if (config.id_topics.empty()) config.id_topics = default_id_topics();
  if (config.ood_topics.empty()) config.ood_topics = default_ood_topics();

  const TeacherPlan teacher =
      calibrate_teacher(config.teacher_precision, config.teacher_recall, config.no_relevant_rate,
                        config.min_relevant, config.max_relevant);
  dataset.teacher_keep = teacher.keep;
  dataset.teacher_add = teacher.add;

  // Entities are created split by split in a fixed order from one stream, so every split's
  // entities are disjoint: validation and test ask about things training never mentions.
  NameMaker names(config.seed);
  Rng world_rng(derive_seed(config.seed, "world"));
  struct Planned {
    const char* name;
    bool ood;
    int count;
  };
  std::vector<Planned> plan = {{"train", false, config.train},
                               {"validation", false, config.validation},
                               {"test", false, config.test},
                               {"test_ood", true, config.test_ood}};
  // Last, so the other splits come out the same whether or not it is asked for.
  if (config.pretrain > 0) plan.push_back({"pretrain", false, config.pretrain});
  std::vector<SplitWorld> worlds;
  for (const auto& p : plan) {
    worlds.push_back(make_split_world(p.name, p.ood, p.count, config.questions_per_entity,
                                      p.ood ? config.ood_topics : config.id_topics, names,
                                      world_rng));
  }
  for (std::size_t i = 0; i < worlds.size(); ++i)
    dataset.splits.push_back(make_split(config, worlds[i], plan[i].count, names, teacher));
  return dataset;
}

std::string synth_split_path(const std::string& dir, const std::string& split) {
  return (std::filesystem::path(dir) / (split + ".jsonl")).string();
}

std::string synth_config_path(const std::string& dir) {
  return (std::filesystem::path(dir) / "synth_config.yaml").string();
}

void write_synth(const SynthDataset& dataset, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(located(dir, "", "cannot create directory: " + ec.message()));
  for (const SynthSplit& split : dataset.splits) {
    write_examples_jsonl(synth_split_path(dir, split.name), split.examples);
  }
  write_file_atomically(synth_config_path(dir), synth_config_to_yaml(dataset.config));
}

}  // namespace citeforge::data
