// The citeforge binary end to end: what a user sees on stdout, stderr and in the exit code.
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "tests/support/test_paths.h"

namespace {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

Result run_citeforge(const std::string& args) {
  std::string command = std::string(CITEFORGE_BINARY_PATH) + " " + args + " 2>&1";
  Result result{-1, ""};
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe))
    result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace

TEST_CASE("citeforge generate continues a story and reports tokens/s", "[trainer][cli]") {
  auto model = citeforge::testing::fixture_path("models/stories260K");
  auto r = run_citeforge("generate --model " + model +
                         " --prompt 'Once upon a time' --greedy --max-new-tokens 16");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find(", there was a little girl named Lily") != std::string::npos);
  CHECK(r.output.find("tokens/s") != std::string::npos);
}

TEST_CASE("citeforge generate decodes on an NF4 base on a CPU unless told otherwise",
          "[trainer][cli]") {
  auto model = citeforge::testing::fixture_path("models/stories260K");
  const std::string base = "generate --model " + model +
                           " --device cpu --prompt 'Once upon a time' --greedy --max-new-tokens 8";
  auto nf4 = run_citeforge(base);
  CHECK(nf4.exit_code == 0);
  CHECK(nf4.output.find("(cpu, NF4 base, float32, finish: length)") != std::string::npos);
  auto dense = run_citeforge(base + " --quantization none --dtype bfloat16");
  CHECK(dense.exit_code == 0);
  CHECK(dense.output.find("(cpu, dense base, bfloat16, finish: length)") != std::string::npos);
  auto wrong = run_citeforge(base + " --quantization int8");
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.output.find("generate: --quantization") != std::string::npos);
}

TEST_CASE("citeforge generate fails with one line on bad input", "[trainer][cli][errors]") {
  auto model = citeforge::testing::fixture_path("models/stories260K");
  auto missing = run_citeforge("generate --model /nonexistent --prompt hi");
  CHECK(missing.exit_code == 1);
  CHECK(missing.output ==
        "citeforge generate: error: /nonexistent: model directory does not exist\n");

  auto unknown = run_citeforge("generate --model " + model + " --prompt hi --beams 4");
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.output.find("unknown option --beams") != std::string::npos);

  auto conflicting =
      run_citeforge("generate --model " + model + " --prompt hi --greedy --temperature 0.7");
  CHECK(conflicting.exit_code == 1);
  CHECK(conflicting.output.find("--greedy cannot be combined") != std::string::npos);

  auto bad_number =
      run_citeforge("generate --model " + model + " --prompt hi --max-new-tokens many");
  CHECK(bad_number.output.find("--max-new-tokens: not an integer") != std::string::npos);

  auto no_command = run_citeforge("frobnicate");
  CHECK(no_command.exit_code == 2);
}
