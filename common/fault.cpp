#include "common/fault.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace citeforge {

bool fault_spec_matches(const char* spec, const std::string& point, int64_t count) {
  return spec && point + ":" + std::to_string(count) == spec;
}

void maybe_kill_at(const std::string& point, int64_t count) {
  static const char* spec = std::getenv("CITEFORGE_KILL_AT");
  if (!fault_spec_matches(spec, point, count)) return;
  std::fprintf(stderr, "[fault] CITEFORGE_KILL_AT=%s: sending SIGKILL\n", spec);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

bool nan_injected_at(const std::string& point, int64_t count) {
  static const char* spec = std::getenv("CITEFORGE_NAN_AT");
  return fault_spec_matches(spec, point, count);
}

}  // namespace citeforge
