// HAGRID's generate-then-retrieve scenario: an answer written without documents gets its
// citations afterwards, each sentence used as a query against the corpus. The passages of all
// sentences are fused into one source list by reciprocal rank fusion (retrieval/ranking_metrics.h)
// and every sentence cites, as [n], its own best passage's place in that list, so the answer and
// its sources can be scored like any other (rewards/).
#pragma once

#include <string>
#include <vector>

#include "data/example.h"
#include "retrieval/corpus.h"

namespace citeforge::retrieval {

struct AttributedAnswer {
  std::string answer;                 // the sentences, each followed by its citation
  std::vector<std::size_t> passages;  // the fused sources, in citation order [1], [2], ...
  int sentences = 0;                  // the answer's non-blank sentences, each a query
  int uncited_sentences = 0;          // sentences no passage matched (left without a citation)
};

// `per_sentence` passages are retrieved for each sentence; at most `max_sources` fused passages
// are kept (a sentence whose best passage falls outside them cites the best one inside).
AttributedAnswer generate_then_retrieve(const Corpus& corpus, const std::string& answer,
                                        std::size_t per_sentence, std::size_t max_sources);

// The example with the fused passages as its sources (numeric citations), labelled relevant
// where they are among the example's gold passages and irrelevant otherwise.
data::Example with_retrieved_sources(const data::Example& example, const Corpus& corpus,
                                     const std::vector<std::size_t>& passages);

}  // namespace citeforge::retrieval
