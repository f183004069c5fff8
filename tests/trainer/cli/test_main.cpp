// The citeforge entry point: every command answers --help with its usage, and unknown commands
// or options are one-line errors with a non-zero exit.
#include <catch2/catch.hpp>

#include "tests/cli_runner.h"

using citeforge::testing::run_citeforge;

TEST_CASE("every command prints its usage with --help", "[trainer][cli]") {
  for (const char* command : {"run", "generate", "score", "data", "tables", "export", "launch"}) {
    INFO(command);
    auto r = run_citeforge(std::string(command) + " --help");
    CHECK(r.exit_code == 0);
    CHECK(r.output.find(std::string("usage: citeforge ") + command) != std::string::npos);
  }
  auto none = run_citeforge("");
  CHECK(none.exit_code == 2);
  CHECK(none.output.find("commands:") != std::string::npos);
  auto unknown = run_citeforge("frobnicate");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("unknown command 'frobnicate'") != std::string::npos);
  auto bad_option = run_citeforge("tables --frob");
  CHECK(bad_option.exit_code == 1);
  CHECK(bad_option.output.find("unknown option --frob") != std::string::npos);
}
