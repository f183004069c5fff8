// The canonical record every importer produces and every stage consumes (docs/design.md §2).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace citeforge::data {

enum class Label { relevant, irrelevant, seemingly_relevant, unknown };
enum class CitationStyle { numeric, named };
enum class LabelKind { gold, silver };

struct Source {
  int key = 0;       // 1-based position in the prompt; numeric answers cite it as [key]
  std::string name;  // e.g. "Cooley & Mitchell, 2007, p. 112"; named answers cite it
  std::string text;
  Label label = Label::unknown;
};

struct Example {
  std::string id;
  std::string origin;  // data set name, e.g. "SynSciQA_test"
  std::string split;   // "train", "validation", "test", ...
  std::string question;
  std::vector<Source> sources;
  CitationStyle citation_style = CitationStyle::numeric;
  LabelKind labels = LabelKind::gold;
  // For silver labels, the reference answer whose citations they were derived from (empty when
  // unknown). Scoring that same answer against them would be circular: `score` refuses to.
  std::string labels_from;
  std::map<std::string, std::string> references;  // reference answers by name ("gpt-35", ...)
};

const char* to_string(Label label);
const char* to_string(CitationStyle style);
const char* to_string(LabelKind kind);

// Parse the JSON spellings above; throw citeforge::Error naming `where` on an unknown value.
Label parse_label(const std::string& text, const std::string& where);
CitationStyle parse_citation_style(const std::string& text, const std::string& where);
LabelKind parse_label_kind(const std::string& text, const std::string& where);

// JSONL, one example per line. Errors name the file, the line and the field.
std::vector<Example> read_examples_jsonl(const std::string& path);
void write_examples_jsonl(const std::string& path, const std::vector<Example>& examples);

}  // namespace citeforge::data
