#include "rewards/aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/error.h"

namespace citeforge::rewards {

namespace {

// splitmix64: a tiny generator whose output is fixed by its definition, unlike
// std::uniform_int_distribution whose results differ between standard libraries.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) without modulo bias (rejection of the short last bucket).
  std::size_t below(std::size_t n) {
    std::uint64_t limit =
        std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
    std::uint64_t x;
    do x = next();
    while (x >= limit);
    return static_cast<std::size_t>(x % n);
  }
};

// Linear interpolation between order statistics (the common "type 7" definition).
double percentile(const std::vector<double>& sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Aggregate aggregate(const std::vector<double>& values, std::uint64_t seed, int resamples) {
  if (resamples < 1) throw Error("bootstrap: resamples must be at least 1");
  Aggregate out;
  out.count = values.size();
  if (values.empty()) {
    out.mean = out.ci_low = out.ci_high = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  double n = static_cast<double>(values.size());
  out.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  SplitMix64 rng{seed};
  std::vector<double> means(static_cast<std::size_t>(resamples));
  for (double& m : means) {
    double sum = 0;
    for (std::size_t i = 0; i < values.size(); ++i) sum += values[rng.below(values.size())];
    m = sum / n;
  }
  std::sort(means.begin(), means.end());
  out.ci_low = percentile(means, 0.025);
  out.ci_high = percentile(means, 0.975);
  return out;
}

}  // namespace citeforge::rewards
