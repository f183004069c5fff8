#include "retrieval/generate_then_retrieve.h"

#include <algorithm>

#include "data/citations.h"
#include "retrieval/ranking_metrics.h"
#include "retrieval/scenarios.h"
#include "rewards/metrics.h"

namespace citeforge::retrieval {

AttributedAnswer generate_then_retrieve(const Corpus& corpus, const std::string& answer,
                                        std::size_t per_sentence, std::size_t max_sources) {
  const std::vector<std::string> sentences = rewards::sentences_of(answer);
  std::vector<std::vector<std::size_t>> rankings;
  for (const auto& s : sentences) rankings.push_back(retrieve(corpus, s, per_sentence));
  AttributedAnswer out;
  out.sentences = int(sentences.size());
  out.passages = reciprocal_rank_fusion(rankings);
  if (out.passages.size() > max_sources) out.passages.resize(max_sources);
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    std::string sentence = sentences[i];
    // The sentence's best passage among the kept ones.
    std::size_t cite = 0;
    for (auto p : rankings[i]) {
      const auto at = std::find(out.passages.begin(), out.passages.end(), p);
      if (at != out.passages.end()) {
        cite = std::size_t(at - out.passages.begin()) + 1;
        break;
      }
    }
    if (!out.answer.empty()) out.answer += " ";
    if (cite == 0) {
      ++out.uncited_sentences;
      out.answer += sentence;
      continue;
    }
    std::string citation = "[";  // appended piece by piece: GCC 12 warns falsely on "[" + s + "]"
    citation += std::to_string(cite);
    citation += ']';
    out.answer += data::cite_sentence(sentence, citation);
  }
  return out;
}

data::Example with_retrieved_sources(const data::Example& example, const Corpus& corpus,
                                     const std::vector<std::size_t>& passages) {
  data::Example out = with_ranked_passages(example, corpus, passages);
  out.citation_style = data::CitationStyle::numeric;  // the answer cites them as [n]
  return out;
}

}  // namespace citeforge::retrieval
