// The llama3, qwen2 and qwen3 chat formats against what each family's own Jinja template renders
// through transformers (tests/fixtures/families/chat_formats.json, written by
// scripts/make_chat_format_fixtures.py from the templates and vocabularies of
// weights/llama.cpp-references/, which scripts/setup.sh unpacks), and the recognition of a
// model's template as one of citeforge's formats.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "models/bpe_tokenizer.h"
#include "models/chat_format.h"
#include "models/gguf.h"
#include "models/gguf_import.h"
#include "models/tokenizer.h"
#include "tests/support/llama_cpp_references.h"
#include "tests/support/minimal_config.h"
#include "tests/support/test_paths.h"
#include "trainer/config/run_config.h"

using namespace citeforge;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Qwen3's vocabulary is Qwen2.5's with more added tokens, <think> and </think> among them (ids
// 151667 and 151668, padding slots in the Qwen1.5 vocabulary GGUF at hand).
models::BpeVocabulary qwen3_vocabulary() {
  auto v = models::gguf_vocabulary(
      models::read_gguf(testing::llama_cpp_reference("ggml-vocab-qwen2.gguf")));
  for (auto [id, content] :
       {std::pair<int64_t, std::string>{151667, "<think>"}, {151668, "</think>"}}) {
    v.tokens[id] = content;
    for (auto& a : v.added)
      if (a.id == id) a = {id, content, false};
  }
  return v;
}

models::Tokenizer family_tokenizer(const std::string& family) {
  if (family == "qwen3") return models::Tokenizer(qwen3_vocabulary(), "qwen3");
  const std::string vocab =
      family == "llama3" ? "ggml-vocab-llama-bpe.gguf" : "ggml-vocab-qwen2.gguf";
  return models::Tokenizer(
      models::gguf_vocabulary(models::read_gguf(testing::llama_cpp_reference(vocab))), vocab);
}

std::vector<int64_t> joined(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("llama3, qwen2 and qwen3 render what the families' own templates render",
          "[families][chat]") {
  const auto fixture = json::parse(read_file(testing::fixture_path("families/chat_formats.json")));
  REQUIRE(fixture["renderings"].size() == 4);
  for (const auto& f : fixture["renderings"]) {
    const std::string family = f["format"];
    INFO(family << " against " << f["template"].get<std::string>());
    const auto tok = family_tokenizer(family);
    const auto& tmpl = models::chat_template(family);
    for (const auto& c : f["cases"]) {
      INFO(c["name"]);
      const auto& m = c["messages"];
      const std::string text = c["text"];
      std::vector<int64_t> ids;
      std::string tail;  // what HF renders after the answer's end token
      if (c["name"] == "user") {
        ids = models::encode_chat_prompt(tok, tmpl, m[0]["content"]);
      } else if (c["name"] == "system_user") {
        ids = models::encode_chat_prompt(tok, tmpl, m[1]["content"], m[0]["content"]);
      } else {
        ids = joined(models::encode_chat_prompt(tok, tmpl, m[1]["content"], m[0]["content"]),
                     models::encode_chat_answer(tok, tmpl, m[2]["content"]));
        tail = family == "llama3" ? "" : "\n";  // ChatML closes a turn with a newline
      }
      CHECK(tok.decode(ids) + tail == text);
      if (c.contains("ids")) {  // HF's tokenizer on HF's rendering (not for qwen3: see fixture)
        const auto expected = c["ids"].get<std::vector<int64_t>>();
        auto with_tail = tail.empty() ? ids : joined(ids, tok.encode(tail));
        CHECK(with_tail == expected);
      }
    }
  }
}

TEST_CASE("a model's chat template is recognised as the format it renders, or refused",
          "[families][chat]") {
  auto recognise = [](const std::string& template_file) {
    const auto path = testing::llama_cpp_reference("templates/" + template_file);
    return models::recognise_chat_format(read_file(path), path);
  };
  // SmolLM2's template as its GGUF carries it (with real newlines, not Jinja's "\n").
  const auto smollm2 = testing::source_path("weights/SmolLM2-135M-Instruct.Q4_1.gguf");
  CHECK(models::recognise_chat_format(models::model_chat_template(smollm2), smollm2) == "smollm2");
  CHECK(models::recognise_chat_format("", "x") == "");
  // Templates whose renderings differ from every format: Llama 3.2 writes today's date, QwQ and
  // SmolLM3 think otherwise, MiMo and the Qwen1.5 vocabulary's template have another default
  // system line, LFM2 starts with BOS, Qwen3-Coder writes a tool preamble, Qwen3.5 trims each
  // message.
  for (const char* other :
       {"meta-llama-Llama-3.2-3B-Instruct.jinja", "Qwen-QwQ-32B.jinja",
        "HuggingFaceTB-SmolLM3-3B.jinja", "MiMo-VL.jinja", "LFM2-8B-A1B.jinja", "Qwen3-Coder.jinja",
        "Qwen3.5-4B.jinja", "google-gemma-2-2b-it.jinja",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja", "microsoft-Phi-3.5-mini-instruct.jinja"}) {
    INFO(other);
    CHECK_THROWS_WITH(recognise(other),
                      Catch::Contains("matches none of citeforge's chat formats (plain, ") &&
                          Catch::Contains("set model.chat_format"));
  }
  const auto qwen15 = testing::llama_cpp_reference("ggml-vocab-qwen2.gguf");
  CHECK_THROWS_WITH(models::recognise_chat_format(models::model_chat_template(qwen15), qwen15),
                    Catch::StartsWith(qwen15 + ": chat template: matches none"));
  // Across llama.cpp's whole collection, only the templates whose renderings the fixture checks
  // against a format are taken for that format; every other one is refused.
  std::map<std::string, std::string> expected;
  const auto fixture = json::parse(read_file(testing::fixture_path("families/chat_formats.json")));
  for (const auto& f : fixture["renderings"]) expected[f["template"]] = f["format"];
  int refused = 0;
  for (const auto& entry : fs::directory_iterator(testing::llama_cpp_reference("templates"))) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".jinja") continue;
    INFO(file);
    if (auto it = expected.find(file); it != expected.end()) {
      CHECK(recognise(file) == it->second);
    } else {
      CHECK_THROWS_AS(recognise(file), Error);
      ++refused;
    }
  }
  CHECK(refused >= 60);
}

TEST_CASE("a run config without model.chat_format takes the model's own, plain for none",
          "[families][chat][config]") {
  const fs::path dir = testing::temp_dir("chat_format_config");
  write_file_atomically((dir / "config.json").string(), "{}");
  write_file_atomically((dir / "tokenizer.json").string(), "{}");
  auto config_with_template = [&](const json& chat_template) {
    write_file_atomically((dir / "tokenizer_config.json").string(),
                          json{{"chat_template", chat_template}}.dump());
    return trainer::parse_run_config(
        testing::kMinimalRunConfig, "t.yaml",
        {"model.build=null", "model.tokenizer_vocab=0", "model.path=" + dir.string()});
  };
  const auto qwen =
      read_file(testing::llama_cpp_reference("templates/Qwen-Qwen2.5-7B-Instruct.jinja"));
  CHECK(config_with_template(qwen).model.chat_format == "qwen2");
  // transformers 4 may store several templates by name.
  CHECK(config_with_template(json::array({{{"name", "tool_use"}, {"template", "x"}},
                                          {{"name", "default"}, {"template", qwen}}}))
            .model.chat_format == "qwen2");
  CHECK_THROWS_WITH(config_with_template("{{ messages }}"),
                    Catch::Contains("matches none of citeforge's chat formats"));
  CHECK_THROWS_WITH(config_with_template(42), Catch::Contains("field 'chat_template'"));
  // An explicit format wins over the template.
  CHECK(trainer::parse_run_config(testing::kMinimalRunConfig, "t.yaml",
                                  {"model.build=null", "model.tokenizer_vocab=0",
                                   "model.path=" + dir.string(), "model.chat_format=chatml"})
            .model.chat_format == "chatml");
  CHECK(trainer::parse_run_config(testing::kMinimalRunConfig, "t.yaml").model.chat_format ==
        "plain");
}
