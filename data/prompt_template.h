// Prompt templates as data (docs/design.md §2): a YAML file says how an Example becomes the user
// message (the model's chat wrapper is applied later, in models/). A template is the prompt text
// with {sources} and {question}, and the text of one source with {key}, {name} and {text}.
#pragma once

#include <string>
#include <vector>

#include "data/example.h"

namespace citeforge::data {

struct PromptTemplate {
  std::string name;
  CitationStyle citation_style = CitationStyle::numeric;
  std::string prompt;                      // holds {sources} and {question} once each
  std::string source = "[{key}]: {text}";  // one source; {text} once, plus {key} or {name}
  std::string source_separator = "\n";     // between rendered sources
};

// Throws citeforge::Error (prefixed with `file`) unless the placeholders are as described above,
// no two placeholders touch (the text between them is what makes a prompt parseable) and the
// separator is not empty. Numeric templates must show {key}, named ones {name}.
void validate_prompt_template(const PromptTemplate& t, const std::string& file);

// YAML keys: name, citation_style (numeric|named), prompt, source, source_separator (default
// "\n"), description (free text, ignored). Unknown keys and wrong types are errors naming the
// file, line and key.
PromptTemplate parse_prompt_template(const std::string& yaml_text, const std::string& file);
PromptTemplate load_prompt_template(const std::string& path);

// `name_or_path` is a file when it ends in .yaml/.yml or holds a '/', else the template
// <templates_dir>/<name>.yaml (e.g. "rage_numeric" in configs/templates).
PromptTemplate find_prompt_template(const std::string& name_or_path,
                                    const std::string& templates_dir);

// The user message for `example`: its sources in order, then the question.
std::string render_prompt(const PromptTemplate& t, const Example& example);

// The inverse of render_prompt: question and sources (key, name and text where the template
// shows them; a missing key is the source's position) read back from a rendered prompt.
// Exact when no source text or question contains the template text that follows it (for
// example the separator). Throws citeforge::Error when `prompt` does not fit the template.
struct ParsedPrompt {
  std::string question;
  std::vector<Source> sources;  // labels are unknown
};
ParsedPrompt parse_rendered_prompt(const PromptTemplate& t, const std::string& prompt);

}  // namespace citeforge::data
