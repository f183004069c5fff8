// Aggregates over examples (docs/design.md §3): the mean with its count and a percentile-bootstrap
// 95% interval. Deterministic for a given seed on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace citeforge::rewards {

struct Aggregate {
  double mean = 0;
  std::size_t count = 0;
  double ci_low = 0;   // 2.5th percentile of the bootstrap means
  double ci_high = 0;  // 97.5th percentile
};

constexpr std::uint64_t kDefaultBootstrapSeed = 20240607;
constexpr int kDefaultBootstrapResamples = 1000;

// Mean, count and bootstrap interval of `values`. An empty input gives count 0 and NaN
// everywhere (written as null in JSON); a single value gives a zero-width interval.
Aggregate aggregate(const std::vector<double>& values, std::uint64_t seed = kDefaultBootstrapSeed,
                    int resamples = kDefaultBootstrapResamples);

}  // namespace citeforge::rewards
