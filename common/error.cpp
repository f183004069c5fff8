#include "common/error.h"

namespace citeforge {

std::string located(const std::string& file, const std::string& where, const std::string& what) {
  std::string out;
  for (const std::string* part : {&file, &where}) {
    if (!part->empty()) out += *part + ": ";
  }
  return out + what;
}

void fail_at(const std::string& file, const std::string& where, const std::string& what) {
  throw Error(located(file, where, what));
}

}  // namespace citeforge
