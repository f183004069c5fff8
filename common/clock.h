// Wall-clock seconds for progress lines, metrics and benchmarks (steady, never goes back).
#pragma once

#include <chrono>

namespace citeforge {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace citeforge
