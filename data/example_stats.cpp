#include "data/example_stats.h"

#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace citeforge::data {

void Summary::add(double value) {
  if (count == 0 || value < min) min = value;
  if (count == 0 || value > max) max = value;
  sum += value;
  ++count;
}

std::size_t count_words(const std::string& text) {
  std::size_t n = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

ExampleStats compute_example_stats(const std::vector<Example>& examples) {
  ExampleStats s;
  const Label labels[] = {Label::relevant, Label::irrelevant, Label::seemingly_relevant,
                          Label::unknown};
  for (const Example& e : examples) {
    ++s.examples;
    ++s.splits[e.split];
    ++s.origins[e.origin];
    ++s.citation_styles[to_string(e.citation_style)];
    ++s.label_kinds[to_string(e.labels)];
    s.sources_per_example.add(static_cast<double>(e.sources.size()));
    s.words_per_question.add(static_cast<double>(count_words(e.question)));
    std::map<Label, std::size_t> per_label;
    for (const Source& source : e.sources) {
      ++per_label[source.label];
      s.words_per_source.add(static_cast<double>(count_words(source.text)));
    }
    for (Label label : labels)
      s.label_per_example[to_string(label)].add(static_cast<double>(per_label[label]));
    if (per_label[Label::relevant] == 0) ++s.without_relevant;
    for (const auto& [name, answer] : e.references) {
      ++s.references[name];
      s.words_per_reference[name].add(static_cast<double>(count_words(answer)));
    }
  }
  return s;
}

namespace {

std::string counts_line(const std::map<std::string, std::size_t>& counts) {
  std::string out;
  for (const auto& [name, n] : counts)
    out += (out.empty() ? "" : ", ") + (name.empty() ? std::string("(none)") : name) + " " +
           std::to_string(n);
  return out.empty() ? "-" : out;
}

std::string summary_line(const std::string& what, const Summary& s) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "  %-34s %9.2f %7.0f %7.0f %9zu\n", what.c_str(), s.mean(),
                s.min, s.max, s.count);
  return buffer;
}

nlohmann::ordered_json summary_json(const Summary& s) {
  return {{"count", s.count}, {"mean", s.mean()}, {"min", s.min}, {"max", s.max}};
}

}  // namespace

std::string format_example_stats(const ExampleStats& s) {
  std::string out;
  out += "examples: " + std::to_string(s.examples) + "\n";
  out += "splits: " + counts_line(s.splits) + "\n";
  out += "origins: " + counts_line(s.origins) + "\n";
  out += "citation styles: " + counts_line(s.citation_styles) + "\n";
  out += "labels: " + counts_line(s.label_kinds) + "\n";
  out += "references: " + counts_line(s.references) + "\n";
  out += "examples without a relevant source: " + std::to_string(s.without_relevant) + "\n";
  char header[160];
  std::snprintf(header, sizeof header, "  %-34s %9s %7s %7s %9s\n", "", "mean", "min", "max",
                "count");
  out += header;
  out += summary_line("sources per example", s.sources_per_example);
  for (const char* label : {"relevant", "irrelevant", "seemingly_relevant", "unknown"}) {
    // Labels no example uses (typically `unknown`) would only add a row of zeros.
    auto it = s.label_per_example.find(label);
    if (it != s.label_per_example.end() && it->second.max > 0)
      out += summary_line(std::string(label) + " per example", it->second);
  }
  out += summary_line("words per question", s.words_per_question);
  out += summary_line("words per source", s.words_per_source);
  for (const auto& [name, summary] : s.words_per_reference)
    out += summary_line("words per reference '" + name + "'", summary);
  return out;
}

std::string example_stats_json(const ExampleStats& s) {
  nlohmann::ordered_json out;
  out["examples"] = s.examples;
  out["splits"] = s.splits;
  out["origins"] = s.origins;
  out["citation_styles"] = s.citation_styles;
  out["labels"] = s.label_kinds;
  out["references"] = s.references;
  out["without_relevant"] = s.without_relevant;
  out["sources_per_example"] = summary_json(s.sources_per_example);
  for (const auto& [label, summary] : s.label_per_example)
    out["per_example"][label] = summary_json(summary);
  out["words_per_question"] = summary_json(s.words_per_question);
  out["words_per_source"] = summary_json(s.words_per_source);
  for (const auto& [name, summary] : s.words_per_reference)
    out["words_per_reference"][name] = summary_json(summary);
  return out.dump(2) + "\n";
}

}  // namespace citeforge::data
