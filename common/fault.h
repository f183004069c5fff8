// Fault injection for the kill-and-resume tests: when the environment variable names this
// point and count (e.g. CITEFORGE_KILL_AT=sft:3), the process sends itself SIGKILL there, the
// same signal an out-of-memory killer or a preempted job gets. Unset, it costs one getenv.
#pragma once

#include <cstdint>
#include <string>

namespace citeforge {

// True when `spec` (an environment variable's value, or null when unset) is "<point>:<count>":
// how every injected fault names where it strikes.
bool fault_spec_matches(const char* spec, const std::string& point, int64_t count);

// Kills the process when CITEFORGE_KILL_AT equals "<point>:<count>".
void maybe_kill_at(const std::string& point, int64_t count);

// True when CITEFORGE_NAN_AT equals "<point>:<count>": the caller then turns its loss into NaN,
// which is how the tests prove a diverging update stops cleanly with the last checkpoint intact.
bool nan_injected_at(const std::string& point, int64_t count);

}  // namespace citeforge
