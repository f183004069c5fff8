#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/file_io.h"
#include "models/chat_format.h"
#include "models/tokenizer.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {

// llama.cpp's vocabulary test format: inputs separated by "\n__ggml_vocab_test__\n", and one
// line of space-separated expected ids per input.
std::vector<std::string> read_inputs(const std::string& path) {
  const std::string text = read_file(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t next; (next = text.find(sep, pos)) != std::string::npos; pos = next + sep.size())
    out.push_back(text.substr(pos, next - pos));
  return out;
}

std::vector<std::vector<int64_t>> read_outputs(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::vector<int64_t>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ids(line);
    out.emplace_back();
    for (int64_t id; ids >> id;) out.back().push_back(id);
  }
  return out;
}

}  // namespace

TEST_CASE("the Llama 2 tokenizer reproduces llama.cpp's test vectors and round-trips",
          "[models][tokenizer]") {
  const auto dir = testing::fixture_path("models/llama2-tokenizer/");
  models::Tokenizer tok(dir + "tokenizer.model");
  CHECK(tok.vocab_size() == 32000);
  CHECK(tok.bos_id() == 1);
  CHECK(tok.eos_id() == 2);
  auto inputs = read_inputs(dir + "test-vectors/llama-spm.inp");
  auto outputs = read_outputs(dir + "test-vectors/llama-spm.out");
  REQUIRE(inputs.size() == outputs.size());
  REQUIRE(inputs.size() > 40);
  for (size_t i = 0; i < inputs.size(); ++i) {
    INFO("vector " << i << ": '" << inputs[i] << "'");
    auto ids = tok.encode(inputs[i]);
    CHECK(ids == outputs[i]);
    CHECK(tok.decode(ids) == inputs[i]);
  }
}

TEST_CASE("byte fallback encodes characters outside the vocabulary as bytes",
          "[models][tokenizer]") {
  models::Tokenizer tok(testing::fixture_path("models/stories260K/tokenizer.model"));
  CHECK(tok.vocab_size() == 512);
  const std::string text = "Lily saw a 🦙 and said ü";
  auto ids = tok.encode(text, true, true);
  CHECK(ids.front() == 1);
  CHECK(ids.back() == 2);
  CHECK(std::find(ids.begin(), ids.end(), 3 + 0xF0) !=
        ids.end());  // <0xF0>, first byte of the llama
  CHECK(tok.decode(ids) == text);
}

TEST_CASE("chat templates wrap prompts as each model family expects", "[models][tokenizer][chat]") {
  models::Tokenizer tok(testing::fixture_path("models/llama2-tokenizer/tokenizer.model"));
  // HF's Llama-2 chat template for "Hi": <s>[INST] Hi [/INST]
  auto llama2 = models::encode_chat_prompt(tok, models::chat_template("llama2"), "Hi");
  CHECK(llama2 == std::vector<int64_t>{1, 518, 25580, 29962, 6324, 518, 29914, 25580, 29962});
  CHECK(models::encode_chat_prompt(tok, models::chat_template("mistral"), "Hi") == llama2);

  auto with_system =
      models::encode_chat_prompt(tok, models::chat_template("llama2"), "Hi", "Be brief.");
  CHECK(tok.decode(with_system) == "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]");

  auto zephyr = models::encode_chat_prompt(tok, models::chat_template("zephyr"), "Hi");
  CHECK(zephyr.front() == 1);
  CHECK(std::count(zephyr.begin(), zephyr.end(), 2) == 1);  // the user turn ends with </s>

  auto answer = models::encode_chat_answer(tok, models::chat_template("llama2"), "Yes [1].");
  CHECK(answer.back() == 2);
  CHECK(tok.decode(answer) == "Yes [1].");

  auto plain = models::encode_chat_prompt(tok, models::chat_template("plain"), "a <eos> b");
  CHECK(std::count(plain.begin(), plain.end(), 2) == 0);  // user text is never a special token

  CHECK_THROWS_WITH(models::chat_template("vicuna"), Contains("unknown chat template 'vicuna'"));
}

TEST_CASE("a missing or invalid tokenizer file is a clear error", "[models][tokenizer][errors]") {
  CHECK_THROWS_WITH(models::Tokenizer("/nonexistent/tokenizer.model"),
                    Contains("/nonexistent/tokenizer.model"));
  auto dir = testing::temp_dir("tok");
  std::ofstream(dir / "tokenizer.model") << "not a model";
  CHECK_THROWS_WITH(models::Tokenizer((dir / "tokenizer.model").string()),
                    Contains("not a SentencePiece model"));
}
