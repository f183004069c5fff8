#include "data/bm25.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace citeforge::data {

namespace {

bool is_token_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

char lower_ascii(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Adds the BM25 contribution of every query term to `scores`, remembering which documents were
// touched so top-k does not have to scan the whole corpus.
void accumulate(const Bm25Index& index, std::string_view query, std::vector<double>& scores,
                std::vector<std::size_t>* touched) {
  const double k1 = index.params.k1;
  const double b = index.params.b;
  const double avg = index.average_length > 0 ? index.average_length : 1.0;
  for (const std::string& term : bm25_tokenize(query)) {
    auto it = index.postings.find(term);
    if (it == index.postings.end()) continue;
    const double idf = bm25_idf(index, term);
    for (const Bm25Posting& p : it->second) {
      const double tf = p.term_frequency;
      const double norm = k1 * (1 - b + b * index.doc_lengths[p.doc] / avg);
      if (touched && scores[p.doc] == 0) touched->push_back(p.doc);
      scores[p.doc] += idf * tf * (k1 + 1) / (tf + norm);
    }
  }
}

}  // namespace

std::vector<std::string> bm25_tokenize(std::string_view text) {
  std::vector<std::string> tokens;
  std::string current;
  for (char c : text) {
    if (is_token_byte(static_cast<unsigned char>(c))) {
      current += lower_ascii(c);
    } else if (!current.empty()) {
      tokens.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

Bm25Index build_bm25_index(const std::vector<std::string>& documents, Bm25Params params) {
  if (params.k1 < 0 || params.b < 0 || params.b > 1)
    throw Error("bm25: k1 must be >= 0 and b in [0, 1]");
  Bm25Index index;
  index.params = params;
  index.doc_lengths.reserve(documents.size());
  double total = 0;
  std::unordered_map<std::string, int> counts;
  for (std::size_t doc = 0; doc < documents.size(); ++doc) {
    counts.clear();
    std::vector<std::string> tokens = bm25_tokenize(documents[doc]);
    for (std::string& token : tokens) ++counts[std::move(token)];
    index.doc_lengths.push_back(static_cast<int>(tokens.size()));
    total += static_cast<double>(tokens.size());
    for (auto& [term, tf] : counts) index.postings[term].push_back({doc, tf});
  }
  index.average_length = documents.empty() ? 0 : total / static_cast<double>(documents.size());
  return index;
}

double bm25_idf(const Bm25Index& index, const std::string& term) {
  auto it = index.postings.find(term);
  if (it == index.postings.end()) return 0;
  const double n_docs = static_cast<double>(index.doc_lengths.size());
  const double df = static_cast<double>(it->second.size());
  return std::log(1 + (n_docs - df + 0.5) / (df + 0.5));
}

std::vector<double> bm25_scores(const Bm25Index& index, std::string_view query) {
  std::vector<double> scores(index.doc_lengths.size(), 0.0);
  accumulate(index, query, scores, nullptr);
  return scores;
}

std::vector<ScoredDoc> bm25_top_k(const Bm25Index& index, std::string_view query, std::size_t k,
                                  const std::unordered_set<std::size_t>& exclude) {
  // A dense score array per call is O(corpus); reuse one per thread so mining over millions of
  // documents only pays for the documents a query actually touches. Entries are all zero between
  // calls: the touched ones are reset before returning.
  thread_local std::vector<double> scores;
  if (scores.size() < index.doc_lengths.size()) scores.resize(index.doc_lengths.size(), 0.0);
  std::vector<std::size_t> touched;
  accumulate(index, query, scores, &touched);
  std::vector<ScoredDoc> hits;
  hits.reserve(touched.size());
  for (std::size_t doc : touched) {
    if (scores[doc] > 0 && !exclude.count(doc)) hits.push_back({doc, scores[doc]});
    scores[doc] = 0;
  }
  auto better = [](const ScoredDoc& x, const ScoredDoc& y) {
    return x.score != y.score ? x.score > y.score : x.doc < y.doc;
  };
  if (hits.size() > k) {
    std::partial_sort(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(k), hits.end(),
                      better);
    hits.resize(k);
  } else {
    std::sort(hits.begin(), hits.end(), better);
  }
  return hits;
}

}  // namespace citeforge::data
