// HAGRID's three scenarios as transformations of examples, so that a model's answers in each are
// scored by rewards/ like any other (docs/design.md §3c):
//   G    generation from the gold passages: the examples as they are;
//   RTG  retrieve-then-generate: each question's sources are the top k BM25 passages of a corpus;
//   GTR  generate-then-retrieve: the question is answered without sources, then each sentence of
//        the answer retrieves its passages (retrieval/generate_then_retrieve.h).
// Retrieved passages are labelled relevant when they are among the question's gold sources (by
// text), irrelevant otherwise, so citation precision and recall keep their meaning.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "data/example.h"
#include "retrieval/corpus.h"

namespace citeforge::retrieval {

enum class Scenario { given, rtg, gtr };

// "given", "rtg", "gtr"; anything else is an Error naming `where`.
Scenario parse_scenario(const std::string& text, const std::string& where);
const char* to_string(Scenario scenario);

// The example with `ranked` passages as its sources, keys 1..n in rank order, labelled against
// the example's gold sources. The citation style is kept; a passage without a name is named by
// its id.
data::Example with_ranked_passages(const data::Example& example, const Corpus& corpus,
                                   const std::vector<std::size_t>& ranked);

// RTG: every example with the top k passages BM25 finds for its question.
std::vector<data::Example> retrieve_then_generate(const Corpus& corpus,
                                                  const std::vector<data::Example>& examples,
                                                  std::size_t k);

// GTR's prompt side: the example without sources (the model answers from what it knows).
data::Example closed_book(const data::Example& example);

struct ClosedBookAttribution {
  data::Example example;  // the example with the fused passages as numeric sources
  std::string answer;     // the answer with a citation [n] after each attributed sentence
  int sentences = 0;
  int uncited_sentences = 0;
};

// GTR's citation side: bracketed numbers the model wrote anyway (it had nothing to cite) are
// removed, then each sentence retrieves k passages and the fused list keeps at most k.
ClosedBookAttribution attribute_closed_book_answer(const Corpus& corpus,
                                                   const data::Example& example,
                                                   const std::string& answer, std::size_t k);

}  // namespace citeforge::retrieval
