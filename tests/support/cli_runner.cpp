#include "tests/support/cli_runner.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "tests/support/test_paths.h"

namespace citeforge::testing {

CliResult run_citeforge(const std::string& args, const std::string& env) {
  // `exec` makes the shell become citeforge, so a signal that ends it shows up here as such.
  const std::string command = "cd '" + source_path("") + "' && " + env + " exec " +
                              CITEFORGE_BINARY_PATH + " " + args + " 2>&1";
  CliResult result{-1, false, ""};
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe))
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  result.killed = WIFSIGNALED(status);
  return result;
}

}  // namespace citeforge::testing
