// Lists in messages and help texts: "a, b, c" or "a|b|c".
#pragma once

#include <string>
#include <vector>

namespace citeforge {

inline std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

}  // namespace citeforge
