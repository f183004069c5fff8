#include "attribution/citation_baselines.h"

#include "data/bm25.h"
#include "data/citations.h"
#include "rewards/metrics.h"

namespace citeforge::attribution {

const std::vector<CitationBaseline>& citation_baselines() {
  static const std::vector<CitationBaseline> all = {CitationBaseline::bm25, CitationBaseline::all,
                                                    CitationBaseline::first};
  return all;
}

const char* to_string(CitationBaseline baseline) {
  switch (baseline) {
    case CitationBaseline::bm25:
      return "cite_bm25";
    case CitationBaseline::all:
      return "cite_all";
    case CitationBaseline::first:
      return "cite_first";
  }
  return "?";
}

std::optional<CitationBaseline> find_citation_baseline(const std::string& name) {
  for (auto baseline : citation_baselines())
    if (name == to_string(baseline)) return baseline;
  return std::nullopt;
}

std::string cite_by_baseline(const data::Example& example, const std::string& answer,
                             CitationBaseline baseline) {
  const std::string text = data::strip_citations(
      answer, data::parse_citations(answer, example.sources, example.citation_style));
  std::vector<int> every;
  std::vector<std::string> documents;
  for (const auto& s : example.sources) {
    every.push_back(s.key);
    documents.push_back(s.text);
  }
  const data::Bm25Index index =
      baseline == CitationBaseline::bm25 ? data::build_bm25_index(documents) : data::Bm25Index{};
  std::string out;
  for (const auto& sentence : rewards::sentences_of(text)) {
    std::vector<int> keys;
    if (baseline == CitationBaseline::all) keys = every;
    if (baseline == CitationBaseline::first && !every.empty()) keys = {every.front()};
    if (baseline == CitationBaseline::bm25) {
      const auto best = data::bm25_top_k(index, sentence, 1);
      if (!best.empty()) keys = {example.sources[best.front().doc].key};
    }
    if (!out.empty()) out += ' ';
    out += keys.empty()
               ? sentence
               : data::cite_sentence(
                     sentence, data::citation_text(example.sources, example.citation_style, keys));
  }
  return out;
}

}  // namespace citeforge::attribution
