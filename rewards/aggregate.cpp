#include "rewards/aggregate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

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

PairedTest paired_test(const std::vector<double>& a, const std::vector<double>& b,
                       std::uint64_t seed, int resamples, int permutations) {
  if (a.size() != b.size())
    throw Error("paired test: " + std::to_string(a.size()) + " scores against " +
                std::to_string(b.size()));
  if (permutations < 1) throw Error("paired test: permutations must be at least 1");
  std::vector<double> differences;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!std::isnan(a[i]) && !std::isnan(b[i])) differences.push_back(a[i] - b[i]);
  const Aggregate interval = aggregate(differences, seed, resamples);
  PairedTest out{interval.mean, interval.count, interval.ci_low, interval.ci_high,
                 std::numeric_limits<double>::quiet_NaN()};
  if (differences.empty()) return out;

  // Zero differences do not change under a sign flip, so only the others are flipped. Sums are
  // compared rather than means (same n), with a relative tolerance so that a flip pattern giving
  // the observed sum up to rounding counts as "as extreme".
  std::vector<double> nonzero;
  for (double d : differences)
    if (d != 0) nonzero.push_back(d);
  const double observed = std::fabs(std::accumulate(nonzero.begin(), nonzero.end(), 0.0));
  const double tolerance = 1e-9 * std::max(1.0, observed);
  if (nonzero.size() <= static_cast<std::size_t>(kExactSignFlipLimit)) {
    const std::uint64_t patterns = std::uint64_t{1} << nonzero.size();
    std::uint64_t extreme = 0;
    for (std::uint64_t pattern = 0; pattern < patterns; ++pattern) {
      double sum = 0;
      for (std::size_t i = 0; i < nonzero.size(); ++i)
        sum += (pattern >> i & 1) ? -nonzero[i] : nonzero[i];
      extreme += std::fabs(sum) >= observed - tolerance ? 1 : 0;
    }
    out.p_value = static_cast<double>(extreme) / static_cast<double>(patterns);
    return out;
  }
  // Monte Carlo: (1 + as extreme) / (1 + draws), which never reports 0 for a p-value it only
  // bounds (the observed pattern is one of the draws' population).
  SplitMix64 rng{seed ^ 0x5349474EULL};
  std::uint64_t extreme = 0;
  for (int k = 0; k < permutations; ++k) {
    double sum = 0;
    for (std::size_t i = 0; i < nonzero.size(); i += 64) {
      std::uint64_t bits = rng.next();
      for (std::size_t j = i; j < std::min(nonzero.size(), i + 64); ++j, bits >>= 1)
        sum += (bits & 1) ? -nonzero[j] : nonzero[j];
    }
    extreme += std::fabs(sum) >= observed - tolerance ? 1 : 0;
  }
  out.p_value = static_cast<double>(extreme + 1) / static_cast<double>(permutations + 1);
  return out;
}

std::vector<double> holm_adjusted(const std::vector<double>& p_values) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < p_values.size(); ++i)
    if (!std::isnan(p_values[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return p_values[x] < p_values[y]; });
  std::vector<double> out(p_values.size(), std::numeric_limits<double>::quiet_NaN());
  const std::size_t m = order.size();
  double running = 0;
  for (std::size_t k = 0; k < m; ++k) {
    const double scaled = std::min(1.0, static_cast<double>(m - k) * p_values[order[k]]);
    running = std::max(running, scaled);
    out[order[k]] = running;
  }
  return out;
}

}  // namespace citeforge::rewards
