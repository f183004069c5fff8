// citeforge import / tokenize / generate on the real GGUF model, as a user runs them.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kGguf = "weights/SmolLM2-135M-Instruct.Q4_1.gguf";
}

TEST_CASE("citeforge import gguf writes a loadable HF directory, atomically",
          "[trainer][cli][gguf]") {
  const auto root = testing::temp_dir("cli_import");
  const auto out = root / "smollm2";
  auto r = testing::run_citeforge("import gguf " + kGguf + " --out " + out.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json",
                           "tokenizer_config.json", "generation_config.json"})
    CHECK(fs::exists(out / name));
  auto config = nlohmann::json::parse(read_file((out / "config.json").string()));
  CHECK(config["num_hidden_layers"] == 30);
  CHECK(config["tie_word_embeddings"] == true);
  // The directory is a model like any other: generate reads it with its tokenizer.json.
  auto g = testing::run_citeforge("generate --model " + out.string() +
                                  " --chat smollm2 --prompt 'What is 2+2?' --greedy "
                                  "--max-new-tokens 6");
  INFO(g.output);
  CHECK(g.exit_code == 0);
  CHECK_THAT(g.output, Contains("tokens/s"));
  // A second import into the now non-empty directory is refused and leaves it as it was.
  auto again = testing::run_citeforge("import gguf " + kGguf + " --out " + out.string());
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Contains("exists and is not empty"));
  CHECK(fs::exists(out / "model.safetensors"));
  fs::remove_all(root);
}

TEST_CASE("citeforge import gguf names the file on bad input and writes nothing",
          "[trainer][cli][gguf][errors]") {
  const auto root = testing::temp_dir("cli_import_errors");
  auto missing = testing::run_citeforge("import gguf /no/such.gguf --out " + (root / "a").string());
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Contains("/no/such.gguf"));
  // The first 100 kB of the real file: the metadata is cut mid-vocabulary.
  const auto cut = (root / "cut.gguf").string();
  std::ofstream(cut, std::ios::binary) << read_file(testing::source_path(kGguf)).substr(0, 100000);
  auto truncated = testing::run_citeforge("import gguf " + cut + " --out " + (root / "b").string());
  CHECK(truncated.exit_code == 1);
  CHECK_THAT(truncated.output, Contains(cut) && Contains("truncated"));
  CHECK_FALSE(fs::exists(root / "a"));
  CHECK_FALSE(fs::exists(root / "b"));
  auto usage = testing::run_citeforge("import safetensors x --out y");
  CHECK(usage.exit_code == 1);
  CHECK_THAT(usage.output, Contains("import: expected 'gguf FILE.gguf'"));
}

TEST_CASE("citeforge tokenize prints the ids of each input line", "[trainer][cli][tokenizer]") {
  const auto input = (testing::temp_dir("cli_tokenize") / "lines.txt").string();
  std::ofstream(input) << "Hello world\n<|im_start|>user\n";
  auto r = testing::run_citeforge("tokenize --model " + kGguf + " < " + input);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("19556 905\n1 4093\n"));
  auto plain =
      testing::run_citeforge("tokenize --model " + kGguf + " --no-parse-special < " + input);
  CHECK_THAT(plain.output, Contains("19556 905\n44 108 306"));
}

TEST_CASE("a chat format the tokenizer cannot express is one clear error",
          "[trainer][cli][chat][errors]") {
  auto model = testing::fixture_path("models/stories260K");
  auto r = testing::run_citeforge("generate --model " + model +
                                  " --chat chatml --prompt hi --greedy --max-new-tokens 2");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("chat format 'chatml' needs the special token <|im_start|>"));
}
