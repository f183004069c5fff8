// Document-mixture throughput (RAGE §3.2, data/mixture.cpp): queries per second for building
// the per-query mixtures of a large synthetic data set, with explicit irrelevant pools and with
// irrelevant documents drawn from a corpus of ids, plus BM25 mining of seemingly relevant pools.
//
//   bench_mixture [--queries 100000] [--corpus 1000000] [--mine-queries 2000]
//                 [--mine-corpus 100000] [--repeat 3]
//
// Standalone build (no torch needed):
//   g++ -std=c++20 -O2 -I. experiments/bench/bench_mixture.cpp data/mixture.cpp data/random.cpp \
//       data/bm25.cpp common/error.cpp -o /tmp/bench_mixture
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/clock.h"
#include "data/bm25.h"
#include "data/mixture.h"
#include "data/random.h"

using namespace citeforge::data;
using citeforge::seconds_since;

namespace {
long option(int argc, char** argv, const std::string& name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + name) return std::strtol(argv[i + 1], nullptr, 10);
  return fallback;
}

std::string doc_id(std::uint64_t n) {
  return "d" + std::to_string(n);
}

// Best of `repeat` runs of building every query's mixture; returns queries per second.
double time_mixtures(const std::vector<std::string>& ids, const std::vector<MixturePools>& pools,
                     const MixtureConfig& config, const std::vector<std::string>* corpus,
                     int repeat, std::size_t& checksum) {
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    checksum = 0;
    auto start = std::chrono::steady_clock::now();
    for (std::size_t q = 0; q < ids.size(); ++q)
      checksum += build_mixture(ids[q], pools[q], config, corpus).size();
    best = std::min(best, seconds_since(start));
  }
  return static_cast<double>(ids.size()) / best;
}

// A synthetic "document" of 40 words from a 20k-word vocabulary with a Zipf-like skew, so BM25
// sees realistic posting-list lengths.
std::string synthetic_text(Rng& rng, int words) {
  std::string text;
  for (int w = 0; w < words; ++w) {
    const double u = uniform01(rng);
    const auto word = static_cast<std::uint64_t>(20000 * u * u * u);
    text += (w ? " w" : "w") + std::to_string(word);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const long n_queries = option(argc, argv, "queries", 100000);
  const long n_corpus = option(argc, argv, "corpus", 1000000);
  const long mine_queries = option(argc, argv, "mine-queries", 2000);
  const long mine_corpus = option(argc, argv, "mine-corpus", 100000);
  const int repeat = static_cast<int>(option(argc, argv, "repeat", 3));

  // Pools like a converted RAGE data set: 1-4 relevant, 10 irrelevant, 10 seemingly relevant
  // document ids per query, drawn from the corpus.
  Rng rng(derive_seed(1, "bench"));
  std::vector<std::string> corpus;
  corpus.reserve(static_cast<std::size_t>(n_corpus));
  for (long d = 0; d < n_corpus; ++d) corpus.push_back(doc_id(static_cast<std::uint64_t>(d)));
  std::vector<std::string> ids;
  std::vector<MixturePools> pools(static_cast<std::size_t>(n_queries));
  for (long q = 0; q < n_queries; ++q) {
    ids.push_back("q" + std::to_string(q));
    MixturePools& p = pools[static_cast<std::size_t>(q)];
    for (int i = 0, n = uniform_int(rng, 1, 4); i < n; ++i) p.relevant.push_back(pick(corpus, rng));
    for (int i = 0; i < 10; ++i) p.irrelevant.push_back(pick(corpus, rng));
    for (int i = 0; i < 10; ++i) p.seemingly_relevant.push_back(pick(corpus, rng));
  }
  MixtureConfig config;  // RAGE's 1-3 relevant, 3 irrelevant, 3 seemingly relevant
  std::size_t checksum = 0;
  const double pooled = time_mixtures(ids, pools, config, nullptr, repeat, checksum);
  std::printf("mixtures, explicit pools:        %ld queries, %10.0f queries/s (docs %zu)\n",
              n_queries, pooled, checksum);
  for (auto& p : pools) p.irrelevant.clear();
  const double sampled = time_mixtures(ids, pools, config, &corpus, repeat, checksum);
  std::printf("mixtures, irrelevant from corpus: %ld queries, %10.0f queries/s (corpus %ld ids)\n",
              n_queries, sampled, n_corpus);

  // BM25 mining of seemingly relevant pools: the expensive step of an import without a mapping.
  std::vector<std::string> texts;
  texts.reserve(static_cast<std::size_t>(mine_corpus));
  for (long d = 0; d < mine_corpus; ++d) texts.push_back(synthetic_text(rng, 40));
  auto start = std::chrono::steady_clock::now();
  const Bm25Index index = build_bm25_index(texts);
  const double index_s = seconds_since(start);
  start = std::chrono::steady_clock::now();
  std::size_t hits = 0;
  for (long q = 0; q < mine_queries; ++q)
    hits += bm25_top_k(index, synthetic_text(rng, 8), 10).size();
  const double mine_qps = static_cast<double>(mine_queries) / seconds_since(start);
  std::printf("bm25 index of %ld docs: %.2f s; top-10 mining: %.0f queries/s (%zu hits)\n",
              mine_corpus, index_s, mine_qps, hits);
  return 0;
}
