// The Llama 3 and Qwen2/2.5/3 tokenizers against HF `tokenizers`' ids. The reference data is
// llama.cpp's (MIT): a vocabulary-only GGUF of each family and its test strings (`.inp`) with the
// ids HF's tokenizer gives them (`.out`, written by llama.cpp's convert_hf_to_gguf_update.py with
// `encode(text, add_special_tokens=False)`). scripts/setup.sh links them as
// weights/llama.cpp-references/ (scripts/deps.env pins the archive and its hash).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_io.h"
#include "models/bpe_tokenizer.h"
#include "models/gguf.h"
#include "models/gguf_import.h"
#include "models/tokenizer.h"
#include "tests/support/llama_cpp_references.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {

struct Case {
  std::string text;
  std::vector<int64_t> ids;
};

// llama.cpp's format: each text followed by "\n__ggml_vocab_test__\n"; one line of ids per text.
std::vector<Case> read_cases(const std::string& vocab) {
  const std::string inp = read_file(testing::llama_cpp_reference(vocab + ".inp"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t pos = 0; pos < inp.size();) {
    size_t next = inp.find(sep, pos);
    if (next == std::string::npos) next = inp.size();
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::ifstream out(testing::llama_cpp_reference(vocab + ".out"));
  size_t i = 0;
  for (std::string line; std::getline(out, line); ++i) {
    REQUIRE(i < cases.size());
    std::istringstream ids(line);
    for (int64_t id; ids >> id;) cases[i].ids.push_back(id);
  }
  REQUIRE(i == cases.size());
  return cases;
}

int count_mismatches(const models::Tokenizer& tok, const std::vector<Case>& cases,
                     const std::string& which) {
  int mismatches = 0;
  for (const auto& c : cases) {
    if (tok.encode(c.text, false, false, /*parse_special=*/true) == c.ids) continue;
    if (++mismatches <= 5)
      UNSCOPED_INFO(which << ": ids differ for " << nlohmann::json(c.text).dump());
  }
  return mismatches;
}

// The same vocabulary through tokenizer.json (and tokenizer_config.json), as an import writes it.
models::Tokenizer through_tokenizer_json(const models::BpeVocabulary& v, const fs::path& dir) {
  write_file_atomically((dir / "tokenizer.json").string(), models::tokenizer_json(v).dump());
  write_file_atomically((dir / "tokenizer_config.json").string(),
                        models::tokenizer_config_json(v, "", 4096).dump());
  return models::Tokenizer((dir / "tokenizer.json").string());
}

}  // namespace

TEST_CASE("Llama 3 and Qwen2 tokenizers give HF's ids on llama.cpp's test strings",
          "[families][tokenizer]") {
  for (const std::string vocab : {"ggml-vocab-llama-bpe.gguf", "ggml-vocab-qwen2.gguf"}) {
    INFO(vocab);
    const auto path = testing::llama_cpp_reference(vocab);
    const auto cases = read_cases(vocab);
    CHECK(cases.size() >= 40);
    const auto v = models::gguf_vocabulary(models::read_gguf(path));
    models::Tokenizer from_gguf(v, path);
    CHECK(count_mismatches(from_gguf, cases, "gguf") == 0);
    const auto dir = testing::temp_dir("family_tokenizer");
    CHECK(count_mismatches(through_tokenizer_json(v, dir), cases, "tokenizer.json") == 0);
  }
}

TEST_CASE(
    "Qwen's tokenizer puts text in NFC first, as its tokenizer.json asks, and Llama 3's does not",
    "[families][tokenizer]") {
  const std::string composed = "caf\xC3\xA9 na\xC3\xAFve \xE1\xBA\xA0";   // é ï Ạ
  const std::string decomposed = "cafe\xCC\x81 nai\xCC\x88ve A\xCC\xA3";  // base + combining
  const auto qwen = models::gguf_vocabulary(
      models::read_gguf(testing::llama_cpp_reference("ggml-vocab-qwen2.gguf")));
  CHECK(qwen.normalize_nfc);
  const auto dir = testing::temp_dir("family_nfc");
  const models::Tokenizer from_gguf(qwen, "qwen2");
  CHECK(from_gguf.encode(decomposed) == from_gguf.encode(composed));
  const auto from_json = through_tokenizer_json(qwen, dir);
  CHECK(from_json.encode(decomposed) == from_json.encode(composed));
  CHECK(nlohmann::json::parse(read_file((dir / "tokenizer.json").string()))["normalizer"] ==
        nlohmann::json{{"type", "NFC"}});
  const auto llama = models::gguf_vocabulary(
      models::read_gguf(testing::llama_cpp_reference("ggml-vocab-llama-bpe.gguf")));
  CHECK_FALSE(llama.normalize_nfc);
  models::Tokenizer llama_tok(llama, "llama-bpe");
  CHECK(llama_tok.encode(decomposed) != llama_tok.encode(composed));
  // Bytes that are not UTF-8 pass the normaliser and meet the pre-tokeniser's one-line error.
  CHECK_THROWS_WITH(models::Tokenizer(qwen, "qwen2").encode("a\xFF\xFE b"),
                    Catch::Contains("qwen2: cannot pre-tokenize text: UTF-8 error"));
}

TEST_CASE("Llama 3's BOS comes from tokenizer.json's post-processor template, both ways",
          "[families][tokenizer]") {
  auto v = models::gguf_vocabulary(
      models::read_gguf(testing::llama_cpp_reference("ggml-vocab-llama-bpe.gguf")));
  const auto dir = testing::temp_dir("family_bos");
  // Llama 3.1's tokenizer.json: ByteLevel, then a template that puts <|begin_of_text|> first;
  // its tokenizer_config.json has no add_bos_token.
  auto j = models::tokenizer_json(v);
  j["post_processor"] = nlohmann::json::parse(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [], "special_tokens": {}}]})");
  write_file_atomically((dir / "tokenizer.json").string(), j.dump());
  const models::Tokenizer tok((dir / "tokenizer.json").string());
  CHECK(tok.adds_bos());
  CHECK(tok.bos_id() == 128000);
  CHECK(tok.encode("Hello", tok.adds_bos()).front() == 128000);
  // What citeforge writes for a BOS-adding tokenizer carries the same template back.
  const auto written = testing::temp_dir("family_bos_written");
  const auto again = through_tokenizer_json(tok.bpe()->vocabulary(), written);
  CHECK(again.adds_bos());
  CHECK(again.bos_id() == 128000);
  // A template that names a token the vocabulary lacks is one line.
  j["post_processor"]["processors"][1]["single"][0]["SpecialToken"]["id"] = "<|nope|>";
  write_file_atomically((dir / "tokenizer.json").string(), j.dump());
  CHECK_THROWS_WITH(models::Tokenizer((dir / "tokenizer.json").string()),
                    Catch::Contains("field 'post_processor'") && Catch::Contains("<|nope|>"));
}
