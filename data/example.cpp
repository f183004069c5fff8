#include "data/example.h"

#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/file_io.h"
#include "data/jsonl.h"

namespace citeforge::data {

using nlohmann::json;
using nlohmann::ordered_json;

const char* to_string(Label label) {
  switch (label) {
    case Label::relevant:
      return "relevant";
    case Label::irrelevant:
      return "irrelevant";
    case Label::seemingly_relevant:
      return "seemingly_relevant";
    case Label::unknown:
      return "unknown";
  }
  return "unknown";
}

const char* to_string(CitationStyle style) {
  return style == CitationStyle::numeric ? "numeric" : "named";
}

const char* to_string(LabelKind kind) {
  return kind == LabelKind::gold ? "gold" : "silver";
}

Label parse_label(const std::string& text, const std::string& where) {
  for (Label l : {Label::relevant, Label::irrelevant, Label::seemingly_relevant, Label::unknown})
    if (text == to_string(l)) return l;
  throw Error(located("", where, "unknown label '" + text + "'"));
}

CitationStyle parse_citation_style(const std::string& text, const std::string& where) {
  for (CitationStyle s : {CitationStyle::numeric, CitationStyle::named})
    if (text == to_string(s)) return s;
  throw Error(located("", where, "unknown citation style '" + text + "' (numeric or named)"));
}

LabelKind parse_label_kind(const std::string& text, const std::string& where) {
  for (LabelKind k : {LabelKind::gold, LabelKind::silver})
    if (text == to_string(k)) return k;
  throw Error(located("", where, "unknown label kind '" + text + "' (gold or silver)"));
}

namespace {

// Reading one line: every failure names the field by its JSON path, e.g. "sources[1].label".
struct LineReader {
  std::string file;
  std::size_t line;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    std::string where = "line " + std::to_string(line);
    fail_at(file, where, field.empty() ? what : "field '" + field + "': " + what);
  }

  const json& member(const json& object, const std::string& parent, const char* name,
                     bool required) const {
    static const json missing;
    auto it = object.find(name);
    if (it == object.end()) {
      if (required) fail(parent + name, "missing");
      return missing;
    }
    return *it;
  }

  std::string text(const json& value, const std::string& field) const {
    if (!value.is_string()) fail(field, std::string("expected a string, got ") + value.type_name());
    return value.get<std::string>();
  }

  void only_known(const json& object, const std::string& parent,
                  const std::set<std::string>& known) const {
    for (const auto& [key, value] : object.items())
      if (!known.count(key)) fail(parent + key, "unknown field");
  }
};

Source read_source(const LineReader& r, const json& value, std::size_t index) {
  std::string path = "sources[" + std::to_string(index) + "]";
  if (!value.is_object()) r.fail(path, "expected an object");
  r.only_known(value, path + ".", {"key", "name", "text", "label"});
  Source s;
  const json& key = r.member(value, path + ".", "key", false);
  if (key.is_null()) {
    s.key = static_cast<int>(index) + 1;
  } else if (!key.is_number_integer() || key.get<long long>() < 1 ||
             key.get<long long>() > 1000000) {
    r.fail(path + ".key", "expected a positive integer, got " + key.dump());
  } else {
    s.key = key.get<int>();
  }
  s.name = r.text(r.member(value, path + ".", "name", true), path + ".name");
  s.text = r.text(r.member(value, path + ".", "text", true), path + ".text");
  const json& label = r.member(value, path + ".", "label", false);
  if (!label.is_null()) {
    std::string text = r.text(label, path + ".label");
    try {
      s.label = parse_label(text, "");
    } catch (const Error& e) {
      r.fail(path + ".label", e.what());
    }
  }
  return s;
}

Example read_example(const LineReader& r, const json& value) {
  if (!value.is_object()) r.fail("", "expected a JSON object");
  r.only_known(value, "",
               {"id", "origin", "split", "question", "sources", "citation_style", "labels",
                "labels_from", "references"});
  Example e;
  e.id = r.text(r.member(value, "", "id", true), "id");
  if (e.id.empty()) r.fail("id", "empty");
  if (auto& v = r.member(value, "", "origin", false); !v.is_null()) e.origin = r.text(v, "origin");
  if (auto& v = r.member(value, "", "split", false); !v.is_null()) e.split = r.text(v, "split");
  e.question = r.text(r.member(value, "", "question", true), "question");
  const json& sources = r.member(value, "", "sources", true);
  if (!sources.is_array()) r.fail("sources", "expected an array");
  std::set<int> keys;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    e.sources.push_back(read_source(r, sources[i], i));
    if (!keys.insert(e.sources.back().key).second)
      r.fail("sources[" + std::to_string(i) + "].key",
             "duplicate key " + std::to_string(e.sources.back().key));
  }
  std::string style = r.text(r.member(value, "", "citation_style", true), "citation_style");
  try {
    e.citation_style = parse_citation_style(style, "");
  } catch (const Error& err) {
    r.fail("citation_style", err.what());
  }
  if (auto& v = r.member(value, "", "labels", false); !v.is_null()) {
    std::string kind = r.text(v, "labels");
    try {
      e.labels = parse_label_kind(kind, "");
    } catch (const Error& err) {
      r.fail("labels", err.what());
    }
  }
  if (auto& v = r.member(value, "", "labels_from", false); !v.is_null()) {
    e.labels_from = r.text(v, "labels_from");
    if (e.labels != LabelKind::silver)
      r.fail("labels_from", "only silver labels come from an answer");
  }
  if (auto& refs = r.member(value, "", "references", false); !refs.is_null()) {
    if (!refs.is_object()) r.fail("references", "expected an object of name: answer");
    for (const auto& [name, answer] : refs.items())
      e.references[name] = r.text(answer, "references." + name);
  }
  return e;
}

}  // namespace

std::vector<Example> read_examples_jsonl(const std::string& path) {
  std::string content = read_file(path);
  std::vector<Example> examples;
  std::set<std::string> ids;
  for_each_jsonl_line(path, content, [&](std::size_t line, json& value) {
    LineReader reader{path, line};
    examples.push_back(read_example(reader, value));
    if (!ids.insert(examples.back().id).second)
      reader.fail("id", "duplicate id '" + examples.back().id + "'");
  });
  return examples;
}

namespace {

ordered_json to_json(const Example& e) {
  ordered_json out;
  out["id"] = e.id;
  out["origin"] = e.origin;
  out["split"] = e.split;
  out["question"] = e.question;
  out["sources"] = ordered_json::array();
  for (const auto& s : e.sources) {
    ordered_json source;
    source["key"] = s.key;
    source["name"] = s.name;
    source["text"] = s.text;
    source["label"] = to_string(s.label);
    out["sources"].push_back(std::move(source));
  }
  out["citation_style"] = to_string(e.citation_style);
  out["labels"] = to_string(e.labels);
  if (!e.labels_from.empty()) out["labels_from"] = e.labels_from;
  out["references"] = ordered_json::object();
  for (const auto& [name, answer] : e.references) out["references"][name] = answer;
  return out;
}

}  // namespace

void write_examples_jsonl(const std::string& path, const std::vector<Example>& examples) {
  std::string bytes;
  for (const auto& e : examples) {
    try {
      bytes += to_json(e).dump() + "\n";
    } catch (const json::type_error& err) {
      // Invalid UTF-8 is the only way dump() fails; name the example rather than guess a fix.
      fail_at(path, "example '" + e.id + "'", std::string("cannot write: ") + err.what());
    }
  }
  write_file_atomically(path, bytes);
}

}  // namespace citeforge::data
