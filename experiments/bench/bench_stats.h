// What the benchmarks report of repeated timings (the median, robust to the odd slow
// repetition of a shared machine) and of the machine they ran on.
#pragma once

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

namespace citeforge::bench {

// The median of `v` (0 when empty).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The CPU's model name as /proc/cpuinfo gives it.
inline std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

}  // namespace citeforge::bench
