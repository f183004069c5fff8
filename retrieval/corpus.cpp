#include "retrieval/corpus.h"

#include <map>
#include <unordered_map>

#include "common/error.h"
#include "common/file_io.h"
#include "data/jsonl.h"

namespace citeforge::retrieval {
namespace {

Corpus indexed(Corpus corpus) {
  std::vector<std::string> texts;
  for (const auto& p : corpus.passages) texts.push_back(p.text);
  corpus.index = data::build_bm25_index(texts);
  return corpus;
}

bool blank(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

Corpus corpus_from_examples(const std::vector<data::Example>& examples) {
  Corpus corpus;
  std::unordered_map<std::string, std::size_t> by_text;
  for (const auto& e : examples)
    for (const auto& s : e.sources) {
      if (blank(s.text)) {
        ++corpus.empty_skipped;
        continue;
      }
      if (by_text.count(s.text)) {
        ++corpus.duplicates_merged;
        continue;
      }
      by_text[s.text] = corpus.passages.size();
      corpus.passages.push_back({e.id + "#" + std::to_string(s.key), s.text, s.name});
    }
  return indexed(std::move(corpus));
}

Corpus corpus_from_passages(std::vector<Passage> passages, const std::string& origin) {
  Corpus corpus;
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < passages.size(); ++i) {
    auto [it, fresh] = seen.emplace(passages[i].id, i);
    if (!fresh)
      throw Error(origin + ": passage " + std::to_string(i + 1) + ": field 'id': '" +
                  passages[i].id + "' is also the id of passage " + std::to_string(it->second + 1));
    if (blank(passages[i].text)) {
      ++corpus.empty_skipped;
      continue;
    }
    corpus.passages.push_back(std::move(passages[i]));
  }
  return indexed(std::move(corpus));
}

std::vector<Passage> read_passages_jsonl(const std::string& path) {
  std::vector<Passage> passages;
  const std::string content = read_file(path);
  data::for_each_jsonl_line(path, content, [&](std::size_t line, nlohmann::json& value) {
    const std::string where = "line " + std::to_string(line);
    if (!value.is_object()) fail_at(path, where, "expected a JSON object");
    auto text = [&](const char* field, bool required) -> std::string {
      auto it = value.find(field);
      if (it == value.end()) {
        if (required) fail_at(path, where, std::string("field '") + field + "': missing");
        return "";
      }
      if (!it->is_string())
        fail_at(path, where,
                std::string("field '") + field + "': expected a string, got " + it->type_name());
      return it->get<std::string>();
    };
    for (const auto& [key, v] : value.items())
      if (key != "id" && key != "text" && key != "name")
        fail_at(path, where, "field '" + key + "': unknown field (id, text, name)");
    Passage p{text("id", true), text("text", true), text("name", false)};
    if (p.id.empty()) fail_at(path, where, "field 'id': empty");
    passages.push_back(std::move(p));
  });
  return passages;
}

std::vector<std::size_t> gold_passages(const Corpus& corpus, const data::Example& example) {
  std::vector<std::size_t> gold;
  for (const auto& s : example.sources) {
    if (s.label != data::Label::relevant) continue;
    for (std::size_t i = 0; i < corpus.passages.size(); ++i)
      if (corpus.passages[i].text == s.text) {
        gold.push_back(i);
        break;
      }
  }
  return gold;
}

std::vector<std::size_t> retrieve(const Corpus& corpus, const std::string& query, std::size_t k) {
  std::vector<std::size_t> out;
  for (const auto& d : data::bm25_top_k(corpus.index, query, k)) out.push_back(d.doc);
  return out;
}

}  // namespace citeforge::retrieval
