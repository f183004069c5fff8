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

FixMethod parse_fix_method(const std::string& name) {
  if (name == "keyword") return FixMethod::keyword;
  if (name == "keyword_bm25") return FixMethod::keyword_bm25;
  throw Error("unknown citation correction method '" + name + "' (keyword, keyword_bm25)");
}

const char* to_string(FixMethod method) {
  switch (method) {
    case FixMethod::keyword:
      return "keyword";
    case FixMethod::keyword_bm25:
      return "keyword_bm25";
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

std::string citation_text(const data::Example& example, const std::vector<int>& keys) {
  std::string out;
  if (example.citation_style == data::CitationStyle::numeric) {
    for (int key : keys) out += "[" + std::to_string(key) + "]";
    return out;
  }
  for (int key : keys)
    for (const auto& s : example.sources)
      if (s.key == key) out += (out.empty() ? "(" : "; ") + s.name;
  return out + ")";
}

}  // namespace

std::vector<FactualPoint> factual_points(const std::string& answer,
                                         const rewards::ParsedCitations& parsed) {
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
        invalid.insert(rewards::normalize_source_name(c.text));
      else if (is_number)
        numbered.insert(c.keys.begin(), c.keys.end());
      else
        named.insert(rewards::normalize_source_name(c.text));
      for (int key : c.keys)
        if (std::find(p.cited.begin(), p.cited.end(), key) == p.cited.end()) p.cited.push_back(key);
    }
    std::sort(p.cited.begin(), p.cited.end());
    previous_end = group.end;
  }
  close();
  return points;
}

std::vector<double> point_scores(const data::Example& example, const std::string& point_text,
                                 const FixOptions& options) {
  const auto words = keywords(point_text);
  std::vector<double> scores;
  for (const auto& source : example.sources) {
    double shared = 0;
    for (const auto& word : keywords(source.text)) shared += words.count(word);
    scores.push_back(shared);
  }
  if (options.method == FixMethod::keyword_bm25 && !example.sources.empty()) {
    std::vector<std::string> texts;
    for (const auto& s : example.sources) texts.push_back(s.text);
    const auto retrieval = data::bm25_scores(data::build_bm25_index(texts), example.question);
    for (std::size_t i = 0; i < scores.size(); ++i) scores[i] += options.bm25_weight * retrieval[i];
  }
  return scores;
}

FixedAnswer fix_citations(const data::Example& example, const std::string& answer,
                          const FixOptions& options) {
  FixedAnswer out;
  const auto parsed = rewards::parse_citations(answer, example.sources, example.citation_style);
  const auto points = factual_points(answer, parsed);
  std::vector<std::size_t> candidates;  // sources with text, by position
  for (std::size_t i = 0; i < example.sources.size(); ++i)
    if (!keywords(example.sources[i].text).empty()) candidates.push_back(i);
  std::size_t copied = 0;
  for (const auto& p : points) {
    if (p.citation_count() == 0) continue;
    ++out.points;
    out.answer += answer.substr(copied, p.cite_begin - copied);
    copied = p.cite_end;
    const std::string original = answer.substr(p.cite_begin, p.cite_end - p.cite_begin);
    const auto scores =
        point_scores(example, answer.substr(p.text_begin, p.text_end - p.text_begin), options);
    double best = 0;
    for (auto i : candidates) best = std::max(best, scores[i]);
    if (candidates.empty() || best <= 0) {  // nothing to go on: leave the point as it is
      out.answer += original;
      continue;
    }
    auto ranked = candidates;
    auto was_cited = [&](std::size_t i) {
      return std::binary_search(p.cited.begin(), p.cited.end(), example.sources[i].key);
    };
    std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
      if (scores[a] != scores[b]) return scores[a] > scores[b];
      return was_cited(a) && !was_cited(b);
    });
    const std::size_t k = std::min<std::size_t>(std::size_t(p.citation_count()), ranked.size());
    std::vector<int> keys;
    for (std::size_t i = 0; i < k; ++i) keys.push_back(example.sources[ranked[i]].key);
    std::sort(keys.begin(), keys.end());
    if (keys != p.cited || p.invalid > 0) {
      ++out.changed;
      out.answer += citation_text(example, keys);
    } else {
      out.answer += original;  // unchanged points keep their own spelling
    }
  }
  out.answer += answer.substr(copied);
  return out;
}

}  // namespace citeforge::attribution
