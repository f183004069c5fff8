// The built-in vocabulary of the synthetic citation world: topics (kinds of things), their
// attributes with closed value sets, and the sentence templates that state, ask and answer a fact.
// Kept in plain English words a tiny tokenizer covers; entity names are made of a few syllables.
#pragma once

#include <string>
#include <vector>

namespace citeforge::data {

// Template placeholders: {e} entity name, {v} value, {V} value with a capital first letter.
struct SynthAttribute {
  std::string name;                     // e.g. "feather_color"
  std::vector<std::string> values;      // closed set the world draws from
  std::string question;                 // asks for the value
  std::vector<std::string> statements;  // different wordings that state the fact
  std::string answer;                   // the answer sentence (without citations)
};

struct SynthTopic {
  std::string name;  // e.g. "bird"
  std::vector<SynthAttribute> attributes;
};

// A surface style: how statements, questions and answers are framed, which neutral filler
// sentences pad passages, and how to abstain. The OOD split uses a style the training data
// never shows. Frames hold {s} (statement), {q} (question) or {a} (answer); a frame that does
// not start with its placeholder lower-cases the first letter of the inserted sentence unless
// it starts with the entity name.
struct SynthStyle {
  std::string name;
  std::vector<std::string> statement_frames;
  std::string question_frame;
  std::string answer_frame;
  std::vector<std::string> fillers;  // contain {e}; state no attribute
  bool fillers_first = false;        // put padding before the statement
  std::string abstain;               // the answer when no document answers the question
};

const std::vector<SynthTopic>& synth_topics();
const SynthTopic* find_synth_topic(const std::string& name);  // nullptr when unknown

// Topics the default configuration uses in and out of distribution.
const std::vector<std::string>& default_id_topics();
const std::vector<std::string>& default_ood_topics();

const SynthStyle& synth_style(bool ood);

// Syllables entity and author names are built from.
const std::vector<std::string>& synth_syllables();

// Fills {e}, {v}, {V} in `pattern`.
std::string fill_fact(const std::string& pattern, const std::string& entity,
                      const std::string& value);

// Puts `sentence` into `frame` at `placeholder` ("{s}", "{q}", "{a}"), lower-casing its first
// letter when the frame does not start with the placeholder and the sentence does not start
// with `entity`.
std::string apply_frame(const std::string& frame, const std::string& placeholder,
                        const std::string& sentence, const std::string& entity);

}  // namespace citeforge::data
