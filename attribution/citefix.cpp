#include "attribution/citefix.h"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <set>
#include <unordered_set>

#include "attribution/stop_words.h"
#include "common/error.h"
#include "data/bm25.h"

namespace citeforge::attribution {

std::optional<FixMethod> find_fix_method(const std::string& name) {
  if (name == "keyword") return FixMethod::keyword;
  if (name == "keyword_bm25") return FixMethod::keyword_bm25;
  if (name == "bertscore") return FixMethod::bertscore;
  if (name == "attention") return FixMethod::attention;
  if (name == "ask_model") return FixMethod::ask_model;
  return std::nullopt;
}

FixMethod parse_fix_method(const std::string& name) {
  if (auto method = find_fix_method(name)) return *method;
  throw Error("unknown citation correction method '" + name +
              "' (keyword, keyword_bm25, bertscore, attention, ask_model)");
}

bool needs_model(FixMethod method) {
  return method != FixMethod::keyword && method != FixMethod::keyword_bm25;
}

const char* to_string(FixMethod method) {
  switch (method) {
    case FixMethod::keyword:
      return "keyword";
    case FixMethod::keyword_bm25:
      return "keyword_bm25";
    case FixMethod::bertscore:
      return "bertscore";
    case FixMethod::attention:
      return "attention";
    case FixMethod::ask_model:
      return "ask_model";
  }
  return "?";
}

namespace {

bool only_separators(const std::string& text, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i)
    if (std::isalnum(static_cast<unsigned char>(text[i])) || (unsigned char)text[i] >= 0x80)
      return false;
  return true;
}

std::unordered_set<std::string> keywords(const std::string& text) {
  std::unordered_set<std::string> out;
  for (auto& word : data::bm25_tokenize(text))
    if (!is_stop_word(word)) out.insert(std::move(word));
  return out;
}

}  // namespace

std::vector<FactualPoint> factual_points(const std::string& answer,
                                         const data::ParsedCitations& parsed) {
  std::vector<FactualPoint> points;
  std::size_t previous_end = 0;
  std::set<std::string> invalid, named;
  std::set<int> numbered;
  auto close = [&] {
    if (points.empty()) return;
    points.back().invalid = int(invalid.size());
    points.back().citations = int(invalid.size() + named.size() + numbered.size());
  };
  for (const auto& group : parsed.groups) {
    const bool joins =
        !points.empty() && only_separators(answer, points.back().cite_end, group.begin);
    if (!joins) {
      close();
      invalid.clear();
      named.clear();
      numbered.clear();
      FactualPoint p;
      p.text_begin = previous_end;
      p.text_end = group.begin;
      p.cite_begin = group.begin;
      points.push_back(p);
    }
    auto& p = points.back();
    p.cite_end = group.end;
    for (const auto& c : group.citations) {
      const bool is_number = !c.text.empty() && std::isdigit(static_cast<unsigned char>(c.text[0]));
      if (!c.valid())
        invalid.insert(data::normalize_source_name(c.text));
      else if (is_number)
        numbered.insert(c.keys.begin(), c.keys.end());
      else
        named.insert(data::normalize_source_name(c.text));
      for (int key : c.keys)
        if (std::find(p.cited.begin(), p.cited.end(), key) == p.cited.end()) p.cited.push_back(key);
    }
    std::sort(p.cited.begin(), p.cited.end());
    previous_end = group.end;
  }
  close();
  return points;
}

namespace {

// What a point's scores need from the example's documents, computed once per answer: their
// keywords and, for keyword_bm25, their BM25 score for the question (the same for every point).
struct Documents {
  std::vector<std::unordered_set<std::string>> words;
  std::vector<double> retrieval;
};

Documents index_documents(const data::Example& example, const FixOptions& options) {
  Documents d;
  std::vector<std::string> texts;
  for (const auto& s : example.sources) {
    d.words.push_back(keywords(s.text));
    texts.push_back(s.text);
  }
  if (options.method == FixMethod::keyword_bm25 && !texts.empty())
    d.retrieval = data::bm25_scores(data::build_bm25_index(texts), example.question);
  return d;
}

std::vector<double> scores_against(const Documents& documents, const std::string& point_text,
                                   const FixOptions& options) {
  const auto words = keywords(point_text);
  std::vector<double> scores;
  for (std::size_t i = 0; i < documents.words.size(); ++i) {
    double shared = 0;
    for (const auto& word : documents.words[i]) shared += words.count(word);
    if (!documents.retrieval.empty()) shared += options.bm25_weight * documents.retrieval[i];
    scores.push_back(shared);
  }
  return scores;
}

}  // namespace

std::vector<double> point_scores(const data::Example& example, const std::string& point_text,
                                 const FixOptions& options) {
  return scores_against(index_documents(example, options), point_text, options);
}

FixedAnswer reassign_citations(const data::Example& example, const std::string& answer,
                               const std::vector<FactualPoint>& points,
                               const std::vector<std::vector<double>>& scores,
                               const std::vector<bool>& candidate) {
  FixedAnswer out;
  std::vector<std::size_t> candidates;  // by position
  for (std::size_t i = 0; i < candidate.size(); ++i)
    if (candidate[i]) candidates.push_back(i);
  std::size_t copied = 0;
  for (std::size_t n = 0; n < points.size(); ++n) {
    const auto& p = points[n];
    if (p.citations == 0) continue;
    ++out.points;
    out.answer += answer.substr(copied, p.cite_begin - copied);
    copied = p.cite_end;
    const std::string original = answer.substr(p.cite_begin, p.cite_end - p.cite_begin);
    const auto& point_scores = scores[n];
    double best = 0;
    for (auto i : candidates) best = std::max(best, point_scores[i]);
    if (candidates.empty() || best <= 0) {  // nothing to go on: leave the point as it is
      out.answer += original;
      continue;
    }
    auto ranked = candidates;
    auto was_cited = [&](std::size_t i) {
      return std::binary_search(p.cited.begin(), p.cited.end(), example.sources[i].key);
    };
    std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
      if (point_scores[a] != point_scores[b]) return point_scores[a] > point_scores[b];
      return was_cited(a) && !was_cited(b);
    });
    const std::size_t k = std::min<std::size_t>(std::size_t(p.citations), ranked.size());
    std::vector<int> keys;
    for (std::size_t i = 0; i < k; ++i) keys.push_back(example.sources[ranked[i]].key);
    std::sort(keys.begin(), keys.end());
    if (keys != p.cited || p.invalid > 0) {
      ++out.changed;
      out.answer += data::citation_text(example.sources, example.citation_style, keys);
    } else {
      out.answer += original;  // unchanged points keep their own spelling
    }
  }
  out.answer += answer.substr(copied);
  return out;
}

FixedAnswer fix_citations(const data::Example& example, const std::string& answer,
                          const FixOptions& options) {
  if (needs_model(options.method))
    throw Error(std::string("fix_citations: method ") + to_string(options.method) +
                " needs the model (attribution/model_scores.h)");
  const auto parsed = data::parse_citations(answer, example.sources, example.citation_style);
  const auto points = factual_points(answer, parsed);
  const Documents documents = index_documents(example, options);
  std::vector<bool> candidates;  // sources with words to match
  for (const auto& words : documents.words) candidates.push_back(!words.empty());
  std::vector<std::vector<double>> scores;
  for (const auto& p : points)
    scores.push_back(
        scores_against(documents, answer.substr(p.text_begin, p.text_end - p.text_begin), options));
  return reassign_citations(example, answer, points, scores, candidates);
}

}  // namespace citeforge::attribution
