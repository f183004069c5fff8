#include "data/mixture.h"

#include <algorithm>
#include <unordered_set>

#include "common/error.h"
#include "data/random.h"

namespace citeforge::data {

namespace {

// `pool` without duplicates and without ids in `taken`, first occurrence kept.
std::vector<std::string> distinct_excluding(const std::vector<std::string>& pool,
                                            std::unordered_set<std::string>& taken) {
  std::vector<std::string> out;
  for (const std::string& id : pool) {
    if (taken.insert(id).second) out.push_back(id);
  }
  return out;
}

void draw_from(const std::vector<std::string>& pool, std::size_t count, Label label, Rng& rng,
               std::vector<MixtureDoc>& out) {
  for (std::size_t i : sample_indices(rng, pool.size(), count)) out.push_back({pool[i], label});
}

// Irrelevant documents drawn from the whole corpus. Rejection sampling keeps this O(count) for a
// large corpus; when most of the corpus is excluded it falls back to listing the eligible ids.
void draw_from_corpus(const std::vector<std::string>& corpus, std::size_t count,
                      const std::unordered_set<std::string>& excluded, Rng& rng,
                      std::vector<MixtureDoc>& out) {
  if (count == 0 || corpus.empty()) return;
  if (corpus.size() <= 4 * (excluded.size() + count)) {
    std::vector<std::string> eligible;
    for (const std::string& id : corpus) {
      if (!excluded.count(id)) eligible.push_back(id);
    }
    draw_from(eligible, count, Label::irrelevant, rng, out);
    return;
  }
  std::unordered_set<std::string> chosen;
  while (chosen.size() < count) {
    const std::string& id = corpus[static_cast<std::size_t>(uniform_below(rng, corpus.size()))];
    if (excluded.count(id) || !chosen.insert(id).second) continue;
    out.push_back({id, Label::irrelevant});
  }
}

}  // namespace

void validate_mixture_config(const MixtureConfig& c) {
  if (c.min_relevant < 0) throw Error("mixture.min_relevant: must be >= 0");
  if (c.max_relevant < c.min_relevant)
    throw Error("mixture.max_relevant: must be >= min_relevant (" + std::to_string(c.min_relevant) +
                ")");
  if (c.irrelevant < 0) throw Error("mixture.irrelevant: must be >= 0");
  if (c.seemingly_relevant < 0) throw Error("mixture.seemingly_relevant: must be >= 0");
}

std::vector<MixtureDoc> build_mixture(const std::string& query_id, const MixturePools& pools,
                                      const MixtureConfig& config,
                                      const std::vector<std::string>* corpus_ids) {
  validate_mixture_config(config);
  std::unordered_set<std::string> taken;
  const std::vector<std::string> relevant = distinct_excluding(pools.relevant, taken);
  const std::vector<std::string> seemingly = distinct_excluding(pools.seemingly_relevant, taken);
  const std::vector<std::string> irrelevant = distinct_excluding(pools.irrelevant, taken);

  // The draw order below (count, relevant, seemingly relevant, irrelevant, shuffle) is part of
  // the reproducibility contract: changing it changes every mixture for a given seed.
  Rng rng(derive_seed(config.seed, query_id));
  const int wanted = uniform_int(rng, config.min_relevant, config.max_relevant);
  std::vector<MixtureDoc> docs;
  draw_from(relevant, static_cast<std::size_t>(wanted), Label::relevant, rng, docs);
  draw_from(seemingly, static_cast<std::size_t>(config.seemingly_relevant),
            Label::seemingly_relevant, rng, docs);
  if (irrelevant.empty() && corpus_ids) {
    draw_from_corpus(*corpus_ids, static_cast<std::size_t>(config.irrelevant), taken, rng, docs);
  } else {
    draw_from(irrelevant, static_cast<std::size_t>(config.irrelevant), Label::irrelevant, rng,
              docs);
  }
  shuffle_in_place(docs, rng);
  return docs;
}

}  // namespace citeforge::data
