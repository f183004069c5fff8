#include "data/prompt_template.h"

#include <filesystem>
#include <map>
#include <optional>

#include "common/error.h"
#include "common/file_io.h"
#include "common/yaml_fields.h"

namespace citeforge::data {

namespace {

// A template string cut into literal text and {placeholder} pieces. Only {lowercase_word} is a
// placeholder; any other brace is literal text.
struct Piece {
  bool placeholder = false;
  std::string text;  // literal text, or the placeholder's name
};

std::vector<Piece> split_pieces(const std::string& pattern) {
  std::vector<Piece> pieces;
  std::string literal;
  std::size_t i = 0;
  while (i < pattern.size()) {
    if (pattern[i] == '{') {
      std::size_t j = i + 1;
      while (j < pattern.size() && ((pattern[j] >= 'a' && pattern[j] <= 'z') || pattern[j] == '_'))
        ++j;
      if (j < pattern.size() && pattern[j] == '}' && j > i + 1) {
        if (!literal.empty()) pieces.push_back({false, std::move(literal)});
        literal.clear();
        pieces.push_back({true, pattern.substr(i + 1, j - i - 1)});
        i = j + 1;
        continue;
      }
    }
    literal += pattern[i++];
  }
  if (!literal.empty()) pieces.push_back({false, std::move(literal)});
  return pieces;
}

int count_placeholder(const std::vector<Piece>& pieces, const std::string& name) {
  int n = 0;
  for (const Piece& p : pieces) n += p.placeholder && p.text == name;
  return n;
}

void check_pattern(const std::vector<Piece>& pieces, const std::string& field,
                   const std::vector<std::string>& allowed, const std::string& file) {
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i].placeholder) continue;
    bool known = false;
    for (const std::string& name : allowed) known = known || name == pieces[i].text;
    if (!known) fail_at(file, "key " + field, "unknown placeholder {" + pieces[i].text + "}");
    if (i + 1 < pieces.size() && pieces[i + 1].placeholder)
      fail_at(file, "key " + field,
              "placeholders {" + pieces[i].text + "} and {" + pieces[i + 1].text +
                  "} need text between them");
  }
}

std::string substitute(const std::vector<Piece>& pieces,
                       const std::map<std::string, std::string>& values) {
  std::string out;
  for (const Piece& p : pieces) out += p.placeholder ? values.at(p.text) : p.text;
  return out;
}

// Matches `text` against `pieces`: literals must appear verbatim; a placeholder takes everything
// up to the first occurrence of the literal that follows it (the last one takes the rest).
std::optional<std::map<std::string, std::string>> match(const std::vector<Piece>& pieces,
                                                        const std::string& text) {
  std::map<std::string, std::string> values;
  std::size_t pos = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    if (!p.placeholder) {
      if (text.compare(pos, p.text.size(), p.text) != 0) return std::nullopt;
      pos += p.text.size();
    } else {
      std::string value;
      if (i + 1 == pieces.size()) {
        value = text.substr(pos);
        pos = text.size();
      } else {
        std::size_t next = text.find(pieces[i + 1].text, pos);
        if (next == std::string::npos) return std::nullopt;
        value = text.substr(pos, next - pos);
        pos = next;
      }
      // A placeholder used twice (the question before and after the sources) must read the
      // same both times, or the text was not rendered from this template.
      auto [it, fresh] = values.emplace(p.text, value);
      if (!fresh && it->second != value) return std::nullopt;
    }
  }
  if (pos != text.size()) return std::nullopt;
  return values;
}

// First bytes of `text` for an error message.
std::string preview(const std::string& text) {
  std::string out = text.substr(0, 60);
  for (char& c : out)
    if (c == '\n') c = ' ';
  return "'" + out + (text.size() > 60 ? "...'" : "'");
}

}  // namespace

void validate_prompt_template(const PromptTemplate& t, const std::string& file) {
  if (t.name.empty()) fail_at(file, "key name", "must not be empty");
  const auto prompt = split_pieces(t.prompt);
  check_pattern(prompt, "prompt", {"sources", "question"}, file);
  if (count_placeholder(prompt, "sources") != 1)
    fail_at(file, "key prompt", "needs {sources} exactly once");
  // Twice is query-aware contextualisation: the question before the sources lets a causal
  // model read every source knowing what is asked, the copy after them is what it answers.
  const int questions = count_placeholder(prompt, "question");
  if (questions < 1 || questions > 2) fail_at(file, "key prompt", "needs {question} once or twice");
  const auto source = split_pieces(t.source);
  check_pattern(source, "source", {"key", "name", "text"}, file);
  if (count_placeholder(source, "text") != 1)
    fail_at(file, "key source", "needs {text} exactly once");
  const char* citing = t.citation_style == CitationStyle::numeric ? "key" : "name";
  if (count_placeholder(source, citing) < 1)
    fail_at(file, "key source",
            std::string("a ") + to_string(t.citation_style) + " template must show {" + citing +
                "}: answers cite sources by it");
  if (t.source_separator.empty()) fail_at(file, "key source_separator", "must not be empty");
}

PromptTemplate parse_prompt_template(const std::string& yaml_text, const std::string& file) {
  YAML::Node root = parse_yaml_text(yaml_text, file);
  require_known_keys(
      root, {"name", "citation_style", "prompt", "source", "source_separator", "description"}, file,
      "");
  auto required = [&](const char* key) {
    if (!root[key]) fail_at(file, "key " + std::string(key), "missing");
    return yaml_string(root[key], {file, key});
  };
  PromptTemplate t;
  t.name = required("name");
  const std::string style = required("citation_style");
  try {
    t.citation_style = parse_citation_style(style, "key citation_style");
  } catch (const Error& e) {
    throw Error(located(file, "", e.what()));
  }
  t.prompt = required("prompt");
  t.source = required("source");
  if (root["source_separator"])
    t.source_separator = yaml_string(root["source_separator"], {file, "source_separator"});
  validate_prompt_template(t, file);
  return t;
}

PromptTemplate load_prompt_template(const std::string& path) {
  return parse_prompt_template(read_file(path), path);
}

PromptTemplate find_prompt_template(const std::string& name_or_path,
                                    const std::string& templates_dir) {
  const std::filesystem::path given(name_or_path);
  const std::string ext = given.extension().string();
  if (ext == ".yaml" || ext == ".yml" || name_or_path.find('/') != std::string::npos)
    return load_prompt_template(name_or_path);
  return load_prompt_template(
      (std::filesystem::path(templates_dir) / (name_or_path + ".yaml")).string());
}

std::string render_prompt(const PromptTemplate& t, const Example& example) {
  const auto source_pieces = split_pieces(t.source);
  std::string sources;
  for (std::size_t i = 0; i < example.sources.size(); ++i) {
    const Source& s = example.sources[i];
    if (i) sources += t.source_separator;
    sources += substitute(source_pieces,
                          {{"key", std::to_string(s.key)}, {"name", s.name}, {"text", s.text}});
  }
  return substitute(split_pieces(t.prompt), {{"sources", sources}, {"question", example.question}});
}

ParsedPrompt parse_rendered_prompt(const PromptTemplate& t, const std::string& prompt) {
  const std::string where = "template '" + t.name + "'";
  auto outer = match(split_pieces(t.prompt), prompt);
  if (!outer) throw Error(where + ": prompt does not fit the template: " + preview(prompt));
  ParsedPrompt parsed;
  parsed.question = outer->at("question");
  const std::string& block = outer->at("sources");
  if (block.empty()) return parsed;

  const auto source_pieces = split_pieces(t.source);
  std::size_t pos = 0;
  for (;;) {
    std::size_t next = block.find(t.source_separator, pos);
    const std::string item =
        block.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    auto fields = match(source_pieces, item);
    const std::string source_where =
        where + ": source " + std::to_string(parsed.sources.size() + 1);
    if (!fields) throw Error(source_where + ": does not fit '" + t.source + "': " + preview(item));
    Source s;
    s.key = static_cast<int>(parsed.sources.size()) + 1;
    if (fields->count("key")) {
      const std::string& key = fields->at("key");
      std::size_t used = 0;
      try {
        s.key = std::stoi(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != key.size())
        throw Error(source_where + ": key '" + key + "' is not a number");
    }
    if (fields->count("name")) s.name = fields->at("name");
    s.text = fields->at("text");
    parsed.sources.push_back(std::move(s));
    if (next == std::string::npos) break;
    pos = next + t.source_separator.size();
  }
  return parsed;
}

}  // namespace citeforge::data
