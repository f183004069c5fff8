#include <catch2/catch.hpp>

#include "data/bm25.h"

using namespace citeforge::data;

namespace {

// Expected scores below were computed by hand (and checked with a few lines of Python) from
// score = sum_t idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg_len)),
// idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), k1 = 1.2, b = 0.75, avg_len = 4.
const std::vector<std::string> kCorpus = {
    "The cat sat.",            // 3 tokens
    "the dog sat on THE mat",  // 6 tokens
    "Cats, and dogs!",         // 3 tokens
};

}  // namespace

TEST_CASE("bm25_tokenize lower-cases and splits on non-alphanumerics") {
  CHECK(bm25_tokenize("Hello, World-42!") == std::vector<std::string>{"hello", "world", "42"});
  CHECK(bm25_tokenize("  ").empty());
  CHECK(bm25_tokenize("caf\xc3\xa9 au lait") ==
        std::vector<std::string>{"caf\xc3\xa9", "au", "lait"});
}

TEST_CASE("bm25 index records lengths and document frequencies") {
  Bm25Index index = build_bm25_index(kCorpus);
  CHECK(index.doc_lengths == std::vector<int>{3, 6, 3});
  CHECK(index.average_length == Approx(4.0));
  REQUIRE(index.postings.count("the"));
  CHECK(index.postings.at("the").size() == 2);
  CHECK(index.postings.at("the")[1].term_frequency == 2);
  CHECK(bm25_idf(index, "the") == Approx(0.4700036292));
  CHECK(bm25_idf(index, "cat") == Approx(0.9808292530));
  CHECK(bm25_idf(index, "unicorn") == 0.0);
}

TEST_CASE("bm25 scores match hand-computed values") {
  Bm25Index index = build_bm25_index(kCorpus);
  auto cat = bm25_scores(index, "cat");
  CHECK(cat[0] == Approx(1.092569).epsilon(1e-6));
  CHECK(cat[1] == 0.0);
  CHECK(cat[2] == 0.0);  // "cats" is a different token: no stemming

  auto the_sat = bm25_scores(index, "the sat");
  CHECK(the_sat[0] == Approx(1.047097).epsilon(1e-6));
  CHECK(the_sat[1] == Approx(0.956771).epsilon(1e-6));
  CHECK(the_sat[2] == 0.0);

  // A repeated query term counts twice.
  auto dog_dog = bm25_scores(index, "dog dog");
  CHECK(dog_dog[1] == Approx(1.628547).epsilon(1e-6));
}

TEST_CASE("bm25_top_k ranks, excludes, drops zero scores and breaks ties by document") {
  Bm25Index index = build_bm25_index(kCorpus);
  auto top = bm25_top_k(index, "the sat", 5);
  REQUIRE(top.size() == 2);  // document 2 scores 0 and is not returned
  CHECK(top[0].doc == 0);
  CHECK(top[1].doc == 1);

  auto excluded = bm25_top_k(index, "the sat", 5, {0});
  REQUIRE(excluded.size() == 1);
  CHECK(excluded[0].doc == 1);

  CHECK(bm25_top_k(index, "the sat", 1).size() == 1);

  Bm25Index twins = build_bm25_index({"red fox", "blue fox", "red fox"});
  auto tied = bm25_top_k(twins, "red", 3);
  REQUIRE(tied.size() == 2);
  CHECK(tied[0].doc == 0);
  CHECK(tied[1].doc == 2);
  CHECK(tied[0].score == tied[1].score);

  // Scratch space is reset between calls: the same query twice gives the same scores.
  auto again = bm25_top_k(index, "the sat", 5);
  CHECK(again[0].score == top[0].score);
}

TEST_CASE("bm25 favours shorter documents for the same term frequency (b > 0)") {
  Bm25Index index = build_bm25_index({"apple", "apple pear plum fig kiwi lime"});
  auto s = bm25_scores(index, "apple");
  CHECK(s[0] > s[1]);
  Bm25Index flat = build_bm25_index({"apple", "apple pear plum fig kiwi lime"}, {1.2, 0.0});
  auto f = bm25_scores(flat, "apple");
  CHECK(f[0] == Approx(f[1]));
}
