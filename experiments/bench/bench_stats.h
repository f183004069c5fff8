// What the benchmarks report of repeated timings: the median, robust to the odd slow
// repetition of a shared machine.
#pragma once

#include <algorithm>
#include <vector>

namespace citeforge::bench {

// The median of `v` (0 when empty).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace citeforge::bench
