#include "data/synth_vocab.h"

#include <cctype>

namespace citeforge::data {

namespace {

using Values = std::vector<std::string>;

const Values kColors = {"red", "blue", "green", "yellow", "white", "black", "brown", "gray"};
const Values kSeasons = {"spring", "summer", "autumn", "winter"};
const Values kMonths = {"January", "February", "March",     "April",   "May",      "June",
                        "July",    "August",   "September", "October", "November", "December"};
const Values kYears = {"1620", "1685", "1702", "1748", "1791", "1803",
                       "1826", "1857", "1874", "1899", "1912", "1930"};
const Values kTens = {"ten", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty"};
const Values kCounts = {"six", "eight", "ten", "twelve", "twenty", "forty"};

// Each attribute has three statement wordings so a question can have up to three relevant
// passages that say the same thing differently (RAGE draws 1-3 relevant documents).
std::vector<SynthTopic> build_topics() {
  return {
      {"bird",
       {{"feather_color",
         kColors,
         "What color are the feathers of the {e}?",
         {"The {e} has {v} feathers.", "Feathers of the {e} are {v}.",
          "The {e} is a bird with {v} feathers."},
         "The {e} has {v} feathers."},
        {"food",
         {"seeds", "bugs", "berries", "worms", "nuts", "snails", "beetles", "crabs"},
         "What does the {e} eat?",
         {"The {e} eats {v}.", "The {e} bird feeds on {v}.", "{V} are the main food of the {e}."},
         "The {e} eats {v}."},
        {"nest",
         {"cliffs", "reeds", "pines", "caves", "marshes", "barns", "dunes", "oaks"},
         "Where does the {e} build its nest?",
         {"The {e} builds its nest in the {v}.", "The {e} nests in the {v}.",
          "Nests of the {e} are found in the {v}."},
         "The {e} nests in the {v}."}}},
      {"river",
       {{"mouth",
         {"sea", "ocean", "bay", "lake", "marsh", "gulf"},
         "Where does the {e} river flow to?",
         {"The {e} river flows into the {v}.", "The {e} river ends in the {v}.",
          "The waters of the {e} river reach the {v}."},
         "The {e} river flows into the {v}."},
        {"length",
         kTens,
         "How long is the {e} river?",
         {"The {e} river is {v} miles long.", "The {e} river runs for {v} miles.",
          "The length of the {e} river is {v} miles."},
         "The {e} river is {v} miles long."},
        {"fish",
         {"trout", "salmon", "carp", "eels", "pike", "perch"},
         "What fish live in the {e} river?",
         {"Many {v} live in the {e} river.", "The {e} river is full of {v}.",
          "People catch {v} in the {e} river."},
         "The {e} river is home to {v}."}}},
      {"town",
       {{"product",
         {"bread", "cheese", "glass", "wool", "salt", "silk", "tea", "honey"},
         "What is the town of {e} known for?",
         {"The town of {e} is known for its {v}.", "{e} is a town that makes fine {v}.",
          "People visit {e} to buy its {v}."},
         "The town of {e} is known for its {v}."},
        {"founded",
         kYears,
         "When was the town of {e} founded?",
         {"The town of {e} was founded in {v}.", "{e} was built in the year {v}.",
          "Settlers founded the town of {e} in {v}."},
         "The town of {e} was founded in {v}."},
        {"festival",
         kMonths,
         "In which month does {e} hold its festival?",
         {"The town of {e} holds its festival in {v}.", "The festival of {e} takes place in {v}.",
          "Every year in {v}, {e} has a big festival."},
         "{e} holds its festival in {v}."}}},
      {"ship",
       {{"material",
         {"oak", "iron", "steel", "pine", "cedar", "birch"},
         "What is the ship {e} made of?",
         {"The ship {e} is made of {v}.", "The {e} was built from {v}.",
          "Builders used {v} to make the ship {e}."},
         "The ship {e} is made of {v}."},
        {"crew",
         kCounts,
         "How many sailors work on the ship {e}?",
         {"The ship {e} has a crew of {v}.", "{V} sailors work on the {e}.",
          "The {e} sails with {v} sailors."},
         "The ship {e} has a crew of {v}."},
        {"sail_color",
         kColors,
         "What color are the sails of the ship {e}?",
         {"The ship {e} has {v} sails.", "The sails of the {e} are {v}.",
          "The {e} flies {v} sails."},
         "The ship {e} has {v} sails."}}},
      {"flower",
       {{"petal_color",
         kColors,
         "What color is the {e} flower?",
         {"The {e} flower is {v}.", "The {e} has {v} petals.", "Petals of the {e} flower are {v}."},
         "The {e} flower is {v}."},
        {"season",
         kSeasons,
         "When does the {e} flower bloom?",
         {"The {e} flower blooms in {v}.", "In {v}, the {e} opens its petals.",
          "The {e} flowers every {v}."},
         "The {e} flower blooms in {v}."},
        {"soil",
         {"sand", "clay", "mud", "rocks", "meadows", "forests"},
         "Where does the {e} flower grow?",
         {"The {e} flower grows in {v}.", "You can find the {e} growing in {v}.",
          "The {e} likes to grow in {v}."},
         "The {e} flower grows in {v}."}}},
      {"machine",
       {{"power",
         {"steam", "wind", "water", "coal", "oil", "horses"},
         "What powers the {e} machine?",
         {"The {e} machine runs on {v}.", "The {e} is powered by {v}.",
          "The {e} machine needs {v} to work."},
         "The {e} machine runs on {v}."},
        {"use",
         {"weaving", "milling", "pumping", "printing", "digging", "sawing"},
         "What is the {e} machine used for?",
         {"The {e} machine is used for {v}.", "People use the {e} for {v}.",
          "The {e} machine was made for {v}."},
         "The {e} machine is used for {v}."},
        {"invented",
         kYears,
         "When was the {e} machine invented?",
         {"The {e} machine was invented in {v}.", "The first {e} was built in {v}.",
          "In {v}, someone invented the {e} machine."},
         "The {e} machine was invented in {v}."}}},
      {"star",
       {{"light_color",
         kColors,
         "What color does the star {e} shine?",
         {"The star {e} shines {v}.", "The light of the star {e} is {v}.", "{e} is a {v} star."},
         "The star {e} shines {v}."},
        {"visible",
         kSeasons,
         "In which season can you see the star {e}?",
         {"The star {e} can be seen in {v}.", "People see the star {e} in {v}.",
          "In {v}, the star {e} rises at night."},
         "The star {e} can be seen in {v}."},
        {"distance",
         kTens,
         "How far away is the star {e}?",
         {"The star {e} is {v} light years away.", "Light from {e} travels {v} years to reach us.",
          "The distance to the star {e} is {v} light years."},
         "The star {e} is {v} light years away."}}},
      {"dance",
       {{"instrument",
         {"drums", "flutes", "harps", "bells", "fiddles", "horns"},
         "Which instrument plays for the {e} dance?",
         {"The {e} dance is played with {v}.", "Dancers of the {e} move to {v}.",
          "Music for the {e} dance comes from {v}."},
         "The {e} dance is played with {v}."},
        {"month",
         kMonths,
         "In which month do people dance the {e}?",
         {"People dance the {e} in {v}.", "The {e} dance is held every {v}.",
          "In {v}, villages dance the {e}."},
         "People dance the {e} in {v}."},
        {"pace",
         {"slow", "fast", "quick", "gentle", "wild", "calm"},
         "What kind of dance is the {e}?",
         {"The {e} is a {v} dance.", "Dancers move in a {v} way in the {e}.",
          "The steps of the {e} are {v}."},
         "The {e} is a {v} dance."}}},
      {"dish",
       {{"ingredient",
         {"beans", "rice", "fish", "corn", "lamb", "carrots", "mushrooms", "eggs"},
         "What is the {e} dish made with?",
         {"The {e} dish is made with {v}.", "Cooks make the {e} from {v}.",
          "The main part of the {e} dish is {v}."},
         "The {e} dish is made with {v}."},
        {"meal",
         {"breakfast", "lunch", "dinner", "supper"},
         "At which meal do people eat the {e}?",
         {"People eat the {e} for {v}.", "The {e} dish is served at {v}.",
          "Families have the {e} at {v}."},
         "People eat the {e} for {v}."},
        {"taste",
         {"sweet", "sour", "salty", "spicy", "bitter", "mild"},
         "How does the {e} dish taste?",
         {"The {e} dish tastes {v}.", "The {e} has a {v} taste.", "People say the {e} is {v}."},
         "The {e} dish tastes {v}."}}},
  };
}

std::string capitalized(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
}

}  // namespace

const std::vector<SynthTopic>& synth_topics() {
  static const std::vector<SynthTopic> topics = build_topics();
  return topics;
}

const SynthTopic* find_synth_topic(const std::string& name) {
  for (const SynthTopic& topic : synth_topics())
    if (topic.name == name) return &topic;
  return nullptr;
}

const std::vector<std::string>& default_id_topics() {
  static const std::vector<std::string> names = {"bird", "river",  "town",
                                                 "ship", "flower", "machine"};
  return names;
}

const std::vector<std::string>& default_ood_topics() {
  static const std::vector<std::string> names = {"star", "dance", "dish"};
  return names;
}

const SynthStyle& synth_style(bool ood) {
  static const SynthStyle plain{"plain",
                                {"{s}"},
                                "{q}",
                                "{a}",
                                {"Many people have heard of {e}.", "{e} is quite famous.",
                                 "Some say {e} is very old.", "Children like to read about {e}."},
                                false,
                                "None of the documents answers this question."};
  // The OOD style frames every statement as reported speech, prefixes questions and answers,
  // pads before the statement and abstains differently: a student that only memorised the
  // plain surface forms has to generalise.
  static const SynthStyle report{
      "report",
      {"Records show that {s}", "It is said that {s}", "Old notes say that {s}"},
      "Tell me, {q}",
      "According to the documents, {a}",
      {"Little else is written about {e}.", "Scholars still study {e}.",
       "The old notes on {e} are short."},
      true,
      "The documents do not say."};
  return ood ? report : plain;
}

const std::vector<std::string>& synth_syllables() {
  static const std::vector<std::string> syllables = {
      "ka", "lo", "mi", "ra", "ten", "vo", "sa",  "bel", "dor", "fi", "nu",  "pa",
      "ro", "si", "ta", "ul", "ven", "zi", "mar", "ko",  "le",  "ny", "gor", "hal"};
  return syllables;
}

std::string fill_fact(const std::string& pattern, const std::string& entity,
                      const std::string& value) {
  std::string out = pattern;
  replace_all(out, "{e}", entity);
  replace_all(out, "{V}", capitalized(value));
  replace_all(out, "{v}", value);
  return out;
}

std::string apply_frame(const std::string& frame, const std::string& placeholder,
                        const std::string& sentence, const std::string& entity) {
  std::string inserted = sentence;
  const bool at_start = frame.rfind(placeholder, 0) == 0;
  const bool starts_with_name = !entity.empty() && sentence.rfind(entity, 0) == 0;
  if (!at_start && !starts_with_name && !inserted.empty()) {
    inserted[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(inserted[0])));
  }
  std::string out = frame;
  replace_all(out, placeholder, inserted);
  return out;
}

}  // namespace citeforge::data
