#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "common/error.h"
#include "data/mixture.h"
#include "data/random.h"

using namespace citeforge::data;

namespace {

MixturePools pools_for(int q, int relevant = 4) {
  MixturePools p;
  const std::string prefix = "q" + std::to_string(q) + "-";
  for (int i = 0; i < relevant; ++i) p.relevant.push_back(prefix + "rel" + std::to_string(i));
  for (int i = 0; i < 10; ++i) p.irrelevant.push_back(prefix + "irr" + std::to_string(i));
  for (int i = 0; i < 10; ++i) p.seemingly_relevant.push_back(prefix + "seem" + std::to_string(i));
  return p;
}

char letter(Label label) {
  switch (label) {
    case Label::relevant:
      return 'R';
    case Label::irrelevant:
      return 'I';
    case Label::seemingly_relevant:
      return 'S';
    default:
      return '?';
  }
}

std::string signature(const std::vector<MixtureDoc>& docs) {
  std::string out;
  for (const auto& d : docs) out += d.doc_id + ":" + letter(d.label) + " ";
  return out;
}

std::map<Label, int> count_labels(const std::vector<MixtureDoc>& docs) {
  std::map<Label, int> counts;
  for (const auto& d : docs) ++counts[d.label];
  return counts;
}

}  // namespace

TEST_CASE("a mixture is reproducible from (seed, query id)") {
  MixtureConfig config;
  config.seed = 17;
  auto a = build_mixture("q1", pools_for(1), config);
  auto b = build_mixture("q1", pools_for(1), config);
  CHECK(signature(a) == signature(b));

  // A different seed gives different mixtures for at least most queries.
  MixtureConfig other = config;
  other.seed = 18;
  int differing = 0;
  for (int q = 0; q < 20; ++q) {
    std::string id = "q" + std::to_string(q);
    differing += signature(build_mixture(id, pools_for(q), config)) !=
                 signature(build_mixture(id, pools_for(q), other));
  }
  CHECK(differing >= 18);
}

TEST_CASE("a query's mixture does not depend on the order queries are processed in") {
  MixtureConfig config;
  config.seed = 3;
  std::vector<int> order(60);
  for (int i = 0; i < 60; ++i) order[i] = i;

  std::map<int, std::string> forward;
  for (int q : order)
    forward[q] = signature(build_mixture("q" + std::to_string(q), pools_for(q), config));

  std::reverse(order.begin(), order.end());
  Rng rng(99);
  shuffle_in_place(order, rng);
  // Interleave unrelated work that also draws random numbers.
  for (int q : order) {
    build_mixture("noise-" + std::to_string(q), pools_for(q + 1000), config);
    CHECK(signature(build_mixture("q" + std::to_string(q), pools_for(q), config)) == forward[q]);
  }
}

TEST_CASE("mixture counts per category follow the configuration") {
  MixtureConfig config;  // 1-3 relevant, 3 irrelevant, 3 seemingly relevant
  config.seed = 5;
  std::map<int, int> relevant_counts;
  for (int q = 0; q < 600; ++q) {
    auto docs = build_mixture("q" + std::to_string(q), pools_for(q), config);
    auto counts = count_labels(docs);
    REQUIRE(counts[Label::irrelevant] == 3);
    REQUIRE(counts[Label::seemingly_relevant] == 3);
    REQUIRE(counts[Label::relevant] >= 1);
    REQUIRE(counts[Label::relevant] <= 3);
    ++relevant_counts[counts[Label::relevant]];

    std::set<std::string> ids;
    for (const auto& d : docs) {
      ids.insert(d.doc_id);
      // Every document comes from the pool of its label.
      const char* tag = d.label == Label::relevant     ? "-rel"
                        : d.label == Label::irrelevant ? "-irr"
                                                       : "-seem";
      REQUIRE(d.doc_id.find(tag) != std::string::npos);
    }
    REQUIRE(ids.size() == docs.size());  // no document twice
  }
  // Uniform over 1..3: about 200 each.
  for (int n = 1; n <= 3; ++n) CHECK(relevant_counts[n] == Approx(200).margin(45));
}

TEST_CASE("mixture documents are shuffled, not grouped by category") {
  MixtureConfig config;
  config.seed = 8;
  std::map<int, int> first_relevant_position;
  for (int q = 0; q < 200; ++q) {
    auto docs = build_mixture("q" + std::to_string(q), pools_for(q), config);
    for (std::size_t i = 0; i < docs.size(); ++i) {
      if (docs[i].label == Label::relevant) {
        ++first_relevant_position[static_cast<int>(i)];
        break;
      }
    }
  }
  CHECK(first_relevant_position.size() >= 5);
  CHECK(first_relevant_position[0] < 150);
}

TEST_CASE("small pools contribute what they have, and zero relevant is allowed") {
  MixtureConfig config;
  config.min_relevant = 2;
  config.max_relevant = 3;
  MixturePools pools;
  pools.relevant = {"r1"};
  pools.irrelevant = {"i1", "i2"};
  pools.seemingly_relevant = {};
  auto docs = build_mixture("q", pools, config);
  auto counts = count_labels(docs);
  CHECK(counts[Label::relevant] == 1);
  CHECK(counts[Label::irrelevant] == 2);
  CHECK(counts[Label::seemingly_relevant] == 0);

  MixtureConfig none;
  none.min_relevant = 0;
  none.max_relevant = 0;
  CHECK(count_labels(build_mixture("q", pools_for(1), none))[Label::relevant] == 0);
}

TEST_CASE("a document in several pools counts once, as relevant before seemingly relevant") {
  MixtureConfig config;
  config.min_relevant = 1;
  config.max_relevant = 1;
  config.irrelevant = 5;
  config.seemingly_relevant = 5;
  MixturePools pools;
  pools.relevant = {"d1"};
  pools.seemingly_relevant = {"d1", "d2", "d2"};
  pools.irrelevant = {"d1", "d2", "d3"};
  auto docs = build_mixture("q", pools, config);
  REQUIRE(docs.size() == 3);
  std::map<std::string, Label> by_id;
  for (const auto& d : docs) by_id[d.doc_id] = d.label;
  CHECK(by_id.at("d1") == Label::relevant);
  CHECK(by_id.at("d2") == Label::seemingly_relevant);
  CHECK(by_id.at("d3") == Label::irrelevant);
}

TEST_CASE("without an irrelevant mapping, irrelevant documents come from the corpus") {
  std::vector<std::string> corpus;
  for (int i = 0; i < 1000; ++i) corpus.push_back("doc" + std::to_string(i));
  MixtureConfig config;
  config.seed = 2;
  for (int q = 0; q < 50; ++q) {
    MixturePools pools;
    pools.relevant = {"doc" + std::to_string(q), "doc" + std::to_string(q + 1)};
    pools.seemingly_relevant = {"doc" + std::to_string(q + 2), "doc" + std::to_string(q + 3),
                                "doc" + std::to_string(q + 4)};
    auto docs = build_mixture("q" + std::to_string(q), pools, config, &corpus);
    std::set<std::string> candidates(pools.relevant.begin(), pools.relevant.end());
    candidates.insert(pools.seemingly_relevant.begin(), pools.seemingly_relevant.end());
    int irrelevant = 0;
    std::set<std::string> ids;
    for (const auto& d : docs) {
      ids.insert(d.doc_id);
      if (d.label != Label::irrelevant) continue;
      ++irrelevant;
      CHECK_FALSE(candidates.count(d.doc_id));
    }
    CHECK(irrelevant == 3);
    CHECK(ids.size() == docs.size());
  }

  // A corpus that is almost all candidates: only the one eligible document can be drawn.
  std::vector<std::string> tiny = {"a", "b", "c"};
  MixturePools pools;
  pools.relevant = {"a"};
  pools.seemingly_relevant = {"b"};
  auto docs = build_mixture("q", pools, config, &tiny);
  auto counts = count_labels(docs);
  CHECK(counts[Label::irrelevant] == 1);
  for (const auto& d : docs)
    if (d.label == Label::irrelevant) CHECK(d.doc_id == "c");
}

TEST_CASE("the draw order is pinned: a known mixture for seed 1") {
  // Guards against accidental changes to the draw sequence, which would silently change every
  // data set built with an existing seed. Update deliberately, with a note in the changelog.
  MixtureConfig config;
  config.seed = 1;
  CHECK(signature(build_mixture("q1", pools_for(1), config)) ==
        "q1-rel0:R q1-irr4:I q1-seem6:S q1-irr9:I q1-seem7:S q1-irr8:I q1-rel2:R q1-seem1:S ");
}

TEST_CASE("invalid mixture configurations name the field") {
  MixtureConfig bad;
  bad.min_relevant = 3;
  bad.max_relevant = 1;
  CHECK_THROWS_WITH(build_mixture("q", pools_for(1), bad), Catch::Contains("max_relevant"));
  MixtureConfig negative;
  negative.irrelevant = -1;
  CHECK_THROWS_AS(validate_mixture_config(negative), citeforge::Error);
  CHECK_THROWS_WITH(validate_mixture_config(negative), Catch::Contains("mixture.irrelevant"));
}
