// The citeforge entry point: every command and subcommand answers --help from its option table,
// unknown commands or options are one-line errors naming the command and the option, and
// --version says what was built.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.h"
#include "trainer/cli/commands.h"

using citeforge::testing::run_citeforge;
using namespace citeforge::trainer;

namespace {

// Every command with a table, subcommands included, by its name after `citeforge`.
std::vector<const CliCommand*> every_command() {
  std::vector<const CliCommand*> out;
  for (const auto& c : citeforge_commands())
    if (c.command) out.push_back(c.command);
  return out;
}

}  // namespace

TEST_CASE("every command prints its usage and options with --help", "[trainer][cli]") {
  auto commands = every_command();
  REQUIRE(commands.size() == 13);  // all but the data group, whose subcommands follow
  for (const auto* command : commands) {
    INFO(command->name);
    auto r = run_citeforge(command->name + " --help");
    CHECK(r.exit_code == 0);
    CHECK(r.output.rfind("usage: citeforge " + command->name, 0) == 0);
    for (const auto& option : command->options) {
      INFO(option.name);
      CHECK(r.output.find("  --" + option.name) != std::string::npos);
      if (!option.fallback.empty())
        CHECK(r.output.find("(default: " + option.fallback + ")") != std::string::npos);
    }
    // An unknown option names the command and the option.
    auto bad = run_citeforge(command->name + " --frobnicate 1");
    CHECK(bad.exit_code == 1);
    CHECK(bad.output.find("citeforge " + command->name.substr(0, command->name.find(' ')) +
                          ": error: " + command->name + ": unknown option --frobnicate") !=
          std::string::npos);
  }
}

TEST_CASE("every subcommand of data answers --help from its table", "[trainer][cli]") {
  for (const char* name : {"data import synsciqa", "data import rage", "data import jsonl",
                           "data synth", "data stats", "data render"}) {
    INFO(name);
    auto r = run_citeforge(std::string(name) + " --help");
    CHECK(r.exit_code == 0);
    CHECK(r.output.rfind(std::string("usage: citeforge ") + name, 0) == 0);
    CHECK(r.output.find("options:") != std::string::npos);
    auto bad = run_citeforge(std::string(name) + " --frobnicate");
    CHECK(bad.exit_code == 1);
    CHECK(bad.output.find(std::string(name) + ": unknown option --frobnicate") !=
          std::string::npos);
  }
  for (const char* group : {"data", "data import"}) {
    INFO(group);
    auto r = run_citeforge(std::string(group) + " --help");
    CHECK(r.exit_code == 0);
    CHECK(r.output.rfind(std::string("usage: citeforge ") + group + " SUBCOMMAND", 0) == 0);
  }
  CHECK(run_citeforge("data import synsciqa --help").output.find("--golden FILE.csv") !=
        std::string::npos);
}

TEST_CASE("citeforge alone, --help, an unknown command and --version", "[trainer][cli]") {
  auto none = run_citeforge("");
  CHECK(none.exit_code == 2);
  CHECK(none.output.find("commands:") != std::string::npos);
  auto help = run_citeforge("--help");
  CHECK(help.exit_code == 0);
  for (const auto& c : citeforge_commands())
    CHECK(help.output.find("  " + c.name) != std::string::npos);
  auto unknown = run_citeforge("frobnicate");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("citeforge: error: unknown command 'frobnicate'") != std::string::npos);
  auto version = run_citeforge("--version");
  CHECK(version.exit_code == 0);
  CHECK(version.output.rfind("citeforge 0.", 0) == 0);
  CHECK(version.output.find("(commit ") != std::string::npos);
  CHECK(version.output.find("), LibTorch 2.") != std::string::npos);
}
