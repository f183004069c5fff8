// Runs the citeforge binary as a user would, for end-to-end tests.
#pragma once

#include <string>

namespace citeforge::testing {

struct CliResult {
  int exit_code;       // -1 when the process did not exit normally
  bool killed;         // ended by a signal
  std::string output;  // stdout and stderr together
};

// Runs `CITEFORGE_BINARY_PATH args` (through /bin/sh, from the repository root) with the
// environment assignments `env` ("A=1 B=2") in front.
CliResult run_citeforge(const std::string& args, const std::string& env = "");

}  // namespace citeforge::testing
