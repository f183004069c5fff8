// Okapi BM25 over an in-memory corpus. The importer uses it to mine "seemingly relevant"
// documents (RAGE §3.1) when a data set ships no such mapping: the documents that look most like
// the query lexically, minus the ones that are actually relevant.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace citeforge::data {

struct Bm25Params {
  double k1 = 1.2;
  double b = 0.75;
};

// Lower-cased runs of ASCII letters and digits; bytes >= 0x80 count as letters so UTF-8 words
// stay whole. Everything else separates tokens.
std::vector<std::string> bm25_tokenize(std::string_view text);

struct Bm25Posting {
  std::size_t doc = 0;
  int term_frequency = 0;
};

struct Bm25Index {
  Bm25Params params;
  std::vector<int> doc_lengths;  // tokens per document
  double average_length = 0;
  std::unordered_map<std::string, std::vector<Bm25Posting>> postings;  // docs ascending
};

// Indexes `documents` (their position is the document number used everywhere below).
Bm25Index build_bm25_index(const std::vector<std::string>& documents, Bm25Params params = {});

// Lucene's non-negative idf: ln(1 + (N - n + 0.5) / (n + 0.5)); 0 for a term in no document.
double bm25_idf(const Bm25Index& index, const std::string& term);

// The score of every document for `query`. A query term that occurs twice counts twice.
std::vector<double> bm25_scores(const Bm25Index& index, std::string_view query);

struct ScoredDoc {
  std::size_t doc = 0;
  double score = 0;
};

// The (at most) k best documents with a positive score, best first, ties broken by the lower
// document number so the result is deterministic; documents in `exclude` are skipped.
std::vector<ScoredDoc> bm25_top_k(const Bm25Index& index, std::string_view query, std::size_t k,
                                  const std::unordered_set<std::size_t>& exclude = {});

}  // namespace citeforge::data
