#include "data/random.h"

#include <numeric>

namespace citeforge::data {

namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

std::uint64_t fnv1a(std::uint64_t hash, std::string_view bytes) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= kFnvPrime;
  }
  return hash;
}

// splitmix64's finaliser: FNV-1a alone mixes the last bytes weakly, and mt19937_64 seeded with
// nearby values starts with correlated outputs.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::uint64_t stable_hash64(std::string_view bytes) {
  return fnv1a(kFnvOffset, bytes);
}

std::uint64_t derive_seed(std::uint64_t seed, std::string_view id) {
  // The seed goes in as 8 little-endian bytes so the result does not depend on host byte order;
  // the 0xff separator keeps (seed, id) pairs from colliding by concatenation.
  char seed_bytes[9];
  for (int i = 0; i < 8; ++i) seed_bytes[i] = static_cast<char>((seed >> (8 * i)) & 0xff);
  seed_bytes[8] = static_cast<char>(0xff);
  std::uint64_t hash = fnv1a(kFnvOffset, std::string_view(seed_bytes, 9));
  return mix64(fnv1a(hash, id));
}

std::uint64_t uniform_below(Rng& rng, std::uint64_t n) {
  // Reject the top partial block of the 64-bit range so every residue is equally likely.
  const std::uint64_t limit = (~std::uint64_t{0}) - (~std::uint64_t{0}) % n;
  std::uint64_t x = rng();
  while (x >= limit) x = rng();
  return x % n;
}

int uniform_int(Rng& rng, int lo, int hi) {
  auto span = static_cast<std::uint64_t>(static_cast<std::int64_t>(hi) - lo + 1);
  return static_cast<int>(lo + static_cast<std::int64_t>(uniform_below(rng, span)));
}

double uniform01(Rng& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

bool bernoulli(Rng& rng, double p) {
  if (p <= 0) return false;
  if (p >= 1) return true;
  return uniform01(rng) < p;
}

std::vector<std::size_t> sample_indices(Rng& rng, std::size_t n, std::size_t k) {
  if (k > n) k = n;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (std::size_t i = 0; i < k; ++i) {
    std::size_t j = i + static_cast<std::size_t>(uniform_below(rng, n - i));
    std::swap(order[i], order[j]);
  }
  order.resize(k);
  return order;
}

}  // namespace citeforge::data
