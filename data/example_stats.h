// Descriptive statistics of a set of examples (`citeforge data stats`): how many, from where,
// how many sources of each label, and how long questions, sources and reference answers are.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "data/example.h"

namespace citeforge::data {

// Running count / mean / min / max of one quantity.
struct Summary {
  std::size_t count = 0;
  double sum = 0;
  double min = 0;
  double max = 0;

  void add(double value);
  double mean() const { return count ? sum / static_cast<double>(count) : 0.0; }
};

struct ExampleStats {
  std::size_t examples = 0;
  std::map<std::string, std::size_t> splits;
  std::map<std::string, std::size_t> origins;
  std::map<std::string, std::size_t> citation_styles;
  std::map<std::string, std::size_t> label_kinds;
  std::map<std::string, std::size_t> references;  // examples holding a reference of that name
  std::size_t without_relevant = 0;               // examples no source answers
  Summary sources_per_example;
  std::map<std::string, Summary> label_per_example;  // "relevant", "irrelevant", ...
  Summary words_per_question;
  Summary words_per_source;
  std::map<std::string, Summary> words_per_reference;  // by reference name
};

// Words are runs of non-whitespace, as in the answer-length metric (docs/design.md §3).
std::size_t count_words(const std::string& text);

ExampleStats compute_example_stats(const std::vector<Example>& examples);

// A plain-text report, one quantity per line with mean/min/max.
std::string format_example_stats(const ExampleStats& stats);

// The same numbers as a JSON object (for scripts).
std::string example_stats_json(const ExampleStats& stats);

}  // namespace citeforge::data
