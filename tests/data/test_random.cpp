#include <catch2/catch.hpp>
#include <set>

#include "data/random.h"

using namespace citeforge::data;

TEST_CASE("stable_hash64 is FNV-1a 64 (published test vectors)") {
  CHECK(stable_hash64("") == 0xcbf29ce484222325ULL);
  CHECK(stable_hash64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(stable_hash64("foobar") == 0x85944171f73967e8ULL);
}

TEST_CASE("derive_seed separates seeds and ids and is stable") {
  CHECK(derive_seed(1, "q1") == derive_seed(1, "q1"));
  CHECK(derive_seed(1, "q1") != derive_seed(2, "q1"));
  CHECK(derive_seed(1, "q1") != derive_seed(1, "q2"));
  // Pinned (recomputed independently in Python): a change here silently changes every mixture
  // and synthetic data set.
  CHECK(derive_seed(1, "q1") == 0x4c34977df9d07e92ULL);
  Rng rng(derive_seed(42, "query-7"));
  const std::uint64_t first = rng();
  Rng again(derive_seed(42, "query-7"));
  CHECK(again() == first);
}

TEST_CASE("mt19937_64 matches the standard's 10000th-output requirement") {
  // [rand.predef]: the 10000th consecutive invocation of a default-constructed mt19937_64
  // produces 9981545732273789042; our reproducibility rests on this.
  Rng rng;
  rng.discard(9999);
  CHECK(rng() == 9981545732273789042ULL);
}

TEST_CASE("uniform_below stays in range and hits every value") {
  Rng rng(7);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t x = uniform_below(rng, 7);
    REQUIRE(x < 7);
    seen.insert(x);
  }
  CHECK(seen.size() == 7);
  CHECK(uniform_below(rng, 1) == 0);
}

TEST_CASE("uniform_int covers an inclusive range with roughly equal frequency") {
  Rng rng(3);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i) {
    int x = uniform_int(rng, 1, 3);
    REQUIRE(x >= 1);
    REQUIRE(x <= 3);
    ++counts[x - 1];
  }
  for (int c : counts) CHECK(c == Approx(10000).margin(400));
}

TEST_CASE("uniform01 and bernoulli respect their bounds") {
  Rng rng(11);
  int hits = 0;
  for (int i = 0; i < 20000; ++i) {
    double u = uniform01(rng);
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    hits += bernoulli(rng, 0.25);
  }
  CHECK(hits == Approx(5000).margin(300));
  CHECK_FALSE(bernoulli(rng, 0.0));
  CHECK(bernoulli(rng, 1.0));
}

TEST_CASE("sample_indices draws distinct indices and caps at n") {
  Rng rng(5);
  auto picked = sample_indices(rng, 10, 4);
  CHECK(picked.size() == 4);
  CHECK(std::set<std::size_t>(picked.begin(), picked.end()).size() == 4);
  for (auto i : picked) CHECK(i < 10);
  CHECK(sample_indices(rng, 3, 9).size() == 3);
  CHECK(sample_indices(rng, 0, 2).empty());
}

TEST_CASE("shuffle_in_place permutes and depends only on the generator state") {
  std::vector<int> a = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int> b = a;
  Rng r1(9), r2(9);
  shuffle_in_place(a, r1);
  shuffle_in_place(b, r2);
  CHECK(a == b);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8});
}
