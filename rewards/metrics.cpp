#include "rewards/metrics.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "common/error.h"

namespace citeforge::rewards {

using data::Example;
using data::Label;

const char* to_string(InvalidCitations mode) {
  return mode == InvalidCitations::penalize ? "penalize" : "ignore";
}

InvalidCitations parse_invalid_citations(const std::string& text, const std::string& where) {
  if (text == "penalize") return InvalidCitations::penalize;
  if (text == "ignore") return InvalidCitations::ignore;
  throw Error(located("", where, "expected 'penalize' or 'ignore', got '" + text + "'"));
}

PrecisionRecall precision_recall(int cited_relevant, int cited, int invalid, int relevant) {
  bool cites_nothing = cited + invalid == 0;
  if (cites_nothing) {
    // Abstaining is right exactly when there is nothing to cite.
    double value = relevant == 0 ? 1.0 : 0.0;
    return {value, value};
  }
  if (relevant == 0) return {0.0, 0.0};
  return {static_cast<double>(cited_relevant) / (cited + invalid),
          static_cast<double>(cited_relevant) / relevant};
}

double f1_score(double precision, double recall) {
  return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0;
}

ChanceReference chance_reference(int cited, int sources, int relevant) {
  const int k = std::min(cited, sources), n = sources, r = relevant;
  if (k <= 0) {
    double value = r == 0 ? 1.0 : 0.0;
    return {value, value, value, value, 1.0};
  }
  if (r == 0) return {0.0, 0.0, 0.0, 0.0, 0.0};
  ChanceReference c;
  c.precision = static_cast<double>(r) / n;
  c.recall = static_cast<double>(k) / n;
  c.f1 = 2.0 * k * r / (static_cast<double>(n) * (k + r));
  // Every cited document relevant: C(r, k) / C(n, k) = prod_{i<k} (r - i) / (n - i).
  double all_relevant = 1.0;
  for (int i = 0; i < k; ++i) all_relevant *= i < r ? static_cast<double>(r - i) / (n - i) : 0.0;
  c.source_quality = all_relevant;
  c.source_quality_paper = all_relevant;
  return c;
}

namespace {

// Length in bytes of the whitespace character starting at `s[i]`, 0 if there is none.
std::size_t whitespace_at(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0; };
  unsigned char c = byte(i);
  if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
  if (c == 0xC2 && (byte(i + 1) == 0x85 || byte(i + 1) == 0xA0)) return 2;  // NEL, NBSP
  if (c == 0xE1 && byte(i + 1) == 0x9A && byte(i + 2) == 0x80) return 3;    // U+1680
  if (c == 0xE3 && byte(i + 1) == 0x80 && byte(i + 2) == 0x80) return 3;    // U+3000
  if (c == 0xE2) {
    unsigned char b1 = byte(i + 1), b2 = byte(i + 2);
    if (b1 == 0x80 && ((b2 >= 0x80 && b2 <= 0x8A) || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF))
      return 3;                              // U+2000..200A, U+2028, U+2029, U+202F
    if (b1 == 0x81 && b2 == 0x9F) return 3;  // U+205F
  }
  return 0;
}

bool is_abbreviation(std::string_view word) {
  static const std::set<std::string, std::less<>> known = {"al", "e.g", "i.e", "p",  "pp",  "vs",
                                                           "cf", "fig", "dr",  "mr", "mrs", "ms"};
  std::string lower(word);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return known.count(lower) > 0;
}

}  // namespace

int count_words(const std::string& text) {
  int words = 0;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t ws = whitespace_at(text, i);
    if (ws > 0) {
      in_word = false;
      i += ws;
    } else {
      if (!in_word) ++words;
      in_word = true;
      ++i;
    }
  }
  return words;
}

std::vector<std::pair<std::size_t, std::size_t>> split_sentences(const std::string& answer) {
  std::vector<std::pair<std::size_t, std::size_t>> sentences;
  auto push = [&](std::size_t begin, std::size_t end) {
    while (begin < end && whitespace_at(answer, begin)) begin += whitespace_at(answer, begin);
    while (end > begin && std::isspace(static_cast<unsigned char>(answer[end - 1]))) --end;
    if (begin < end) sentences.emplace_back(begin, end);
  };
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < answer.size(); ++i) {
    char c = answer[i];
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && depth > 0) --depth;
    if (depth > 0 || (c != '.' && c != '!' && c != '?')) continue;
    std::size_t next = i + 1;
    while (next < answer.size() && (answer[next] == '"' || answer[next] == '\'')) ++next;
    if (next < answer.size() && !whitespace_at(answer, next)) continue;  // "3.5", "e.g.,"
    if (c == '.') {
      std::size_t w = i;
      while (w > start && !whitespace_at(answer, w - 1) && answer[w - 1] != '(') --w;
      if (is_abbreviation(std::string_view(answer).substr(w, i - w))) continue;
    }
    push(start, next);
    start = next;
  }
  push(start, answer.size());
  return sentences;
}

double format_quality(const std::string& answer, const data::ParsedCitations& citations,
                      int relevant_count) {
  if (citations.groups.empty()) return relevant_count == 0 ? 1.0 : 0.0;
  auto sentences = split_sentences(answer);
  if (sentences.empty()) return 0.0;
  int good = 0;
  for (auto [begin, end] : sentences) {
    // Drop the terminator and closing quotes: "... (Smith, 2019)." ends in the group.
    while (end > begin &&
           std::string_view(".!?\"' ").find(answer[end - 1]) != std::string_view::npos)
      --end;
    for (const auto& group : citations.groups) {
      if (group.end == end && group.begin >= begin) {
        good += group.well_formed() ? 1 : 0;
        break;
      }
    }
  }
  return static_cast<double>(good) / sentences.size();
}

double source_quality(const Example& example, const data::ParsedCitations& citations,
                      int invalid_count) {
  int relevant = 0;
  for (const auto& s : example.sources) relevant += s.label == Label::relevant ? 1 : 0;
  if (citations.cited.empty() && invalid_count == 0) return relevant == 0 ? 1.0 : 0.0;
  if (citations.cited.empty() || invalid_count > 0) return 0.0;
  // What is left is the paper's test: no cited source is irrelevant or seemingly relevant.
  return source_quality_paper(example, citations);
}

double source_quality_paper(const Example& example, const data::ParsedCitations& citations) {
  for (const auto& s : example.sources) {
    bool bad = s.label == Label::irrelevant || s.label == Label::seemingly_relevant;
    if (bad && citations.cited.count(s.key)) return 0.0;
  }
  return 1.0;
}

AnswerMetrics score_answer(const Example& example, const std::string& answer,
                           const MetricOptions& options,
                           const std::optional<std::string>& reference) {
  data::ParsedCitations parsed =
      data::parse_citations(answer, example.sources, example.citation_style);
  std::set<int> relevant;
  for (const auto& s : example.sources)
    if (s.label == Label::relevant) relevant.insert(s.key);
  int hits = 0;
  for (int key : parsed.cited) hits += relevant.count(key) ? 1 : 0;

  AnswerMetrics m;
  m.distinct_citations = static_cast<int>(parsed.cited.size());
  m.invalid_citations = static_cast<int>(parsed.invalid.size());
  int invalid = options.invalid_citations == InvalidCitations::penalize ? m.invalid_citations : 0;
  auto pr =
      precision_recall(hits, m.distinct_citations, invalid, static_cast<int>(relevant.size()));
  m.precision = pr.precision;
  m.recall = pr.recall;
  m.f1 = f1_score(m.precision, m.recall);
  m.reward = (m.precision + m.recall) / 2;
  m.answer_length = count_words(answer);
  m.source_quality = source_quality(example, parsed, invalid);
  m.source_quality_paper = source_quality_paper(example, parsed);
  m.format_quality = format_quality(answer, parsed, static_cast<int>(relevant.size()));
  auto chance =
      chance_reference(m.distinct_citations + m.invalid_citations,
                       static_cast<int>(example.sources.size()), static_cast<int>(relevant.size()));
  m.chance_precision = chance.precision;
  m.chance_recall = chance.recall;
  m.chance_f1 = chance.f1;
  m.chance_reward = (chance.precision + chance.recall) / 2;
  m.chance_source_quality = chance.source_quality;
  m.chance_source_quality_paper = chance.source_quality_paper;
  if (reference) {
    data::ParsedCitations ref =
        data::parse_citations(*reference, example.sources, example.citation_style);
    int shared = 0;
    for (int key : parsed.cited) shared += ref.cited.count(key) ? 1 : 0;
    auto overlap =
        precision_recall(shared, m.distinct_citations, invalid, static_cast<int>(ref.cited.size()));
    m.overlap_precision = overlap.precision;
    m.overlap_recall = overlap.recall;
  }
  return m;
}

std::vector<std::pair<std::string, double>> named_values(const AnswerMetrics& m) {
  std::vector<std::pair<std::string, double>> out = {
      {"precision", m.precision},
      {"recall", m.recall},
      {"f1", m.f1},
      {"reward", m.reward},
      {"answer_length", m.answer_length},
      {"distinct_citations", m.distinct_citations},
      {"invalid_citations", m.invalid_citations},
      {"source_quality", m.source_quality},
      {"source_quality_paper", m.source_quality_paper},
      {"format_quality", m.format_quality},
      {"chance_precision", m.chance_precision},
      {"chance_recall", m.chance_recall},
      {"chance_f1", m.chance_f1},
      {"chance_reward", m.chance_reward},
      {"chance_source_quality", m.chance_source_quality},
      {"chance_source_quality_paper", m.chance_source_quality_paper},
  };
  if (m.overlap_precision) out.emplace_back("overlap_precision", *m.overlap_precision);
  if (m.overlap_recall) out.emplace_back("overlap_recall", *m.overlap_recall);
  return out;
}

std::vector<std::string> sentences_of(const std::string& answer) {
  std::vector<std::string> out;
  for (const auto& [begin, end] : split_sentences(answer)) {
    const std::string sentence = answer.substr(begin, end - begin);
    const auto first = sentence.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) continue;
    out.push_back(sentence.substr(first, sentence.find_last_not_of(" \t\r\n") - first + 1));
  }
  return out;
}

}  // namespace citeforge::rewards
