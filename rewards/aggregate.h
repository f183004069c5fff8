// Aggregates over examples (docs/design.md §3): the mean with its count and a percentile-bootstrap
// 95% interval, and the paired test of two scores of the same examples (a model against its
// chance reference, against the base model, corrected against uncorrected answers).
// Deterministic for a given seed on every platform.
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

// A paired comparison of two scores of the same examples: the mean per-example difference
// a - b with a percentile-bootstrap 95% interval of that mean (examples resampled as pairs) and
// the two-sided p-value of a sign-flip permutation test (under "no difference" each pair's
// difference is as likely negative as positive). A gain is claimed where the interval excludes 0.
struct PairedTest {
  double difference = 0;  // mean of a_i - b_i
  std::size_t count = 0;  // pairs where both scores are defined
  double ci_low = 0;
  double ci_high = 0;
  double p_value = 1;
};

constexpr int kDefaultPermutations = 10000;
// Up to this many non-zero differences the sign-flip test enumerates all 2^n sign patterns
// (an exact p-value); above it draws kDefaultPermutations of them.
constexpr int kExactSignFlipLimit = 16;

// Pairs whose a or b is NaN (not applicable) are left out. An empty input gives count 0 and NaN
// everywhere; a and b of different lengths is citeforge::Error.
PairedTest paired_test(const std::vector<double>& a, const std::vector<double>& b,
                       std::uint64_t seed = kDefaultBootstrapSeed,
                       int resamples = kDefaultBootstrapResamples,
                       int permutations = kDefaultPermutations);

// Holm's step-down adjustment of a family of p-values, in the input's order: the k-th smallest
// is multiplied by (m - k + 1), made non-decreasing along that order and capped at 1. NaN entries
// are not part of the family and stay NaN.
std::vector<double> holm_adjusted(const std::vector<double>& p_values);

}  // namespace citeforge::rewards
