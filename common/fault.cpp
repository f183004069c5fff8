#include "common/fault.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace citeforge {

void maybe_kill_at(const std::string& point, int64_t count) {
  static const char* spec = std::getenv("CITEFORGE_KILL_AT");
  if (!spec || point + ":" + std::to_string(count) != spec) return;
  std::fprintf(stderr, "[fault] CITEFORGE_KILL_AT=%s: sending SIGKILL\n", spec);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

bool nan_injected_at(const std::string& point, int64_t count) {
  static const char* spec = std::getenv("CITEFORGE_NAN_AT");
  return spec && point + ":" + std::to_string(count) == spec;
}

}  // namespace citeforge
