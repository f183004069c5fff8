// The document mixture of RAGE §3.2: for each query a few relevant documents, k irrelevant and
// k seemingly relevant ones, shuffled into prompt order. All draws for a query come from one
// generator seeded by (seed, query id), so a query's mixture is the same whatever other queries
// were processed, in whatever order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/example.h"

namespace citeforge::data {

struct MixtureConfig {
  int min_relevant = 1;  // RAGE draws 1-3 relevant documents per query
  int max_relevant = 3;
  int irrelevant = 3;  // RAGE §3.3 uses 3 irrelevant and 3 seemingly relevant
  int seemingly_relevant = 3;
  std::uint64_t seed = 1;
};

// Throws citeforge::Error naming the offending field.
void validate_mixture_config(const MixtureConfig& config);

// The candidate documents of one query, by document id, in a fixed order (file order).
// A document listed in several pools counts once, in the first of relevant, seemingly relevant,
// irrelevant that lists it.
struct MixturePools {
  std::vector<std::string> relevant;
  std::vector<std::string> irrelevant;
  std::vector<std::string> seemingly_relevant;
};

struct MixtureDoc {
  std::string doc_id;
  Label label = Label::unknown;
};

// The documents of one query in prompt order (the i-th gets key i + 1). The number of relevant
// documents is uniform in [min_relevant, max_relevant], capped by the pool; a pool smaller than
// its count contributes all it has. When `pools.irrelevant` is empty and `corpus_ids` is given,
// irrelevant documents are drawn uniformly from the corpus, excluding the query's relevant and
// seemingly relevant candidates (how RAGE builds its irrelevant mapping); `corpus_ids` must hold
// distinct ids.
std::vector<MixtureDoc> build_mixture(const std::string& query_id, const MixturePools& pools,
                                      const MixtureConfig& config,
                                      const std::vector<std::string>* corpus_ids = nullptr);

}  // namespace citeforge::data
