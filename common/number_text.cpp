#include "common/number_text.h"

#include <charconv>

namespace citeforge {

std::string number_text(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace citeforge
