// Seeded randomness that gives the same draws on every platform and standard library.
// std::uniform_int_distribution and std::shuffle are implementation-defined, so data that must be
// reproducible from (seed, id) uses these helpers on top of std::mt19937_64, whose output sequence
// the standard fixes.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

namespace citeforge::data {

using Rng = std::mt19937_64;

// FNV-1a 64 over `bytes`: stable across runs, compilers and platforms (unlike std::hash).
std::uint64_t stable_hash64(std::string_view bytes);

// A seed for the stream of one item (a query, an example) derived from the run seed and the
// item's id, so an item's draws do not depend on which items were processed before it.
std::uint64_t derive_seed(std::uint64_t seed, std::string_view id);

// Uniform integer in [0, n) without modulo bias; n must be > 0.
std::uint64_t uniform_below(Rng& rng, std::uint64_t n);

// Uniform integer in [lo, hi] (inclusive); lo <= hi.
int uniform_int(Rng& rng, int lo, int hi);

// Uniform double in [0, 1) with 53 random bits.
double uniform01(Rng& rng);

// True with probability p (p <= 0 never, p >= 1 always).
bool bernoulli(Rng& rng, double p);

// k distinct indices of [0, n) in draw order (partial Fisher-Yates); k is capped at n.
std::vector<std::size_t> sample_indices(Rng& rng, std::size_t n, std::size_t k);

// Fisher-Yates shuffle with uniform_below.
template <typename T>
void shuffle_in_place(std::vector<T>& items, Rng& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::size_t j = static_cast<std::size_t>(uniform_below(rng, i));
    using std::swap;
    swap(items[i - 1], items[j]);
  }
}

// One uniformly chosen element; `items` must not be empty.
template <typename T>
const T& pick(const std::vector<T>& items, Rng& rng) {
  return items[static_cast<std::size_t>(uniform_below(rng, items.size()))];
}

}  // namespace citeforge::data
