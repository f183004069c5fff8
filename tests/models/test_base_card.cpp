// What a base model says about itself for model cards: the imported GGUF's card reads back, an
// HF card's licence and the hub cache's repository id are found, and broken front matter is a
// named error.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/file_io.h"
#include "models/base_card.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("an imported GGUF's card reads back as the base's facts", "[models][card]") {
  const auto dir = testing::temp_dir("base_card_import");
  write_file_atomically((dir / "README.md").string(),
                        models::imported_base_card({"Some Model: 7B", "llama2", "org/some-model"},
                                                   "/x/some-model.Q4_1.gguf"));
  const auto facts = models::read_base_facts(dir.string());
  CHECK(facts.name == "Some Model: 7B");  // a colon survives the YAML quoting
  CHECK(facts.license == "llama2");
  CHECK(facts.hub_id == "org/some-model");
  CHECK_THAT(read_file((dir / "README.md").string()), Contains("some-model.Q4_1.gguf"));
}

TEST_CASE("an HF directory's card gives its licence, the hub cache its id, config its name",
          "[models][card]") {
  const auto root = testing::temp_dir("base_card_hf");
  const auto dir = root / "models--HuggingFaceTB--SmolLM2-135M-Instruct" / "snapshots" / "abc";
  fs::create_directories(dir);
  // A hub card's base_model names the base's own parent, not the base: it is not read as the id.
  write_file_atomically((dir / "README.md").string(),
                        "---\nlicense: apache-2.0\nbase_model: HuggingFaceTB/SmolLM2-135M\n---\n"
                        "# SmolLM2\n");
  write_file_atomically((dir / "config.json").string(), R"({"_name_or_path": "smol"})");
  auto facts = models::read_base_facts(dir.string());
  CHECK(facts.license == "apache-2.0");
  CHECK(facts.hub_id == "HuggingFaceTB/SmolLM2-135M-Instruct");
  CHECK(facts.name == "smol");

  const auto bare = root / "bare";
  fs::create_directories(bare);
  facts = models::read_base_facts(bare.string());
  CHECK(facts.name.empty());
  CHECK(facts.license.empty());
  CHECK(facts.hub_id.empty());

  write_file_atomically((bare / "README.md").string(), "---\nlicense: [unclosed\n---\n");
  CHECK_THROWS_WITH(models::read_base_facts(bare.string()),
                    Contains("README.md") && Contains("front matter"));
}

TEST_CASE("front matter is the YAML between the leading --- lines", "[models][card]") {
  CHECK(models::front_matter("---\na: 1\nb: 2\n---\n# x\n") == "a: 1\nb: 2\n");
  CHECK(models::front_matter("# no front matter\n---\n").empty());
  CHECK(models::front_matter("---\nunterminated: 1\n").empty());
}
