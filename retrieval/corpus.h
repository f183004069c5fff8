// A retrieval corpus for attributed-retrieval evaluation (HAGRID's retrieve-then-generate, and
// LLM-retEval; docs/design.md §3c): passages with ids, indexed with BM25 (data/bm25.h), and
// what each question's gold passages are.
#pragma once

#include <string>
#include <vector>

#include "data/bm25.h"
#include "data/example.h"

namespace citeforge::retrieval {

struct Passage {
  std::string id;
  std::string text;
  std::string name;  // the source's name where the data set gives one (named citations)
};

struct Corpus {
  std::vector<Passage> passages;
  data::Bm25Index index;
  int empty_skipped = 0;      // passages without text, left out of the index
  int duplicates_merged = 0;  // sources with the text of an earlier passage
};

// The corpus of a data set: every source of every example, one passage per distinct text
// (SynSciQA repeats sources across questions), id "<example id>#<key>" of its first occurrence.
// Empty sources are left out and counted.
Corpus corpus_from_examples(const std::vector<data::Example>& examples);

// A corpus from given passages. A repeated id is an Error naming `origin` and both positions;
// an empty passage is left out and counted.
Corpus corpus_from_passages(std::vector<Passage> passages, const std::string& origin);

// Passages from JSONL, one {"id", "text"[, "name"]} per line (evaluate-retriever's --corpus).
// Errors name the file, the line and the field; a repeated id is an error (corpus_from_passages).
std::vector<Passage> read_passages_jsonl(const std::string& path);

// Positions in `corpus` of the example's relevant sources (label relevant), by text.
std::vector<std::size_t> gold_passages(const Corpus& corpus, const data::Example& example);

// The k passages BM25 ranks highest for `query`, best first (fewer when fewer score above 0
// or the corpus is smaller than k).
std::vector<std::size_t> retrieve(const Corpus& corpus, const std::string& query, std::size_t k);

}  // namespace citeforge::retrieval
