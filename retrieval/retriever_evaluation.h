// A retriever judged by its passages alone (LLM-retEval's first half): BM25's top k passages of
// the corpus for every question, scored against the question's gold passages.
#pragma once

#include <cstddef>
#include <vector>

#include "data/example.h"
#include "retrieval/corpus.h"

namespace citeforge::retrieval {

struct RetrieverEvaluation {
  std::vector<std::vector<std::size_t>> rankings;  // per question, its top k passages
  // Means over the questions; recall and F1 leave out the questions without a gold passage in
  // the corpus (NaN when none has one).
  double recall = 0, precision = 0, f1 = 0;
  int without_gold = 0;  // questions with no gold passage in the corpus
  int gold_outside = 0;  // relevant sources of the questions not found in the corpus (by text)
};

RetrieverEvaluation evaluate_retriever(const Corpus& corpus,
                                       const std::vector<data::Example>& examples, std::size_t k);

}  // namespace citeforge::retrieval
