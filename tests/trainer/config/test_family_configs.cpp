// The GPU configs of the newer families parse and validate with a tiny model of the same family
// in place of the 7-8B one: the family fixture's config and weights, with the family's real
// tokenizer (from llama.cpp's vocabulary GGUF, weights/llama.cpp-references/) and chat template
// beside them, as an HF download has them. The config's chat format must be the one the model's
// own template renders, and the tokenizer must have that format's special tokens.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "models/bpe_tokenizer.h"
#include "models/chat_format.h"
#include "models/gguf.h"
#include "models/gguf_import.h"
#include "models/tokenizer.h"
#include "tests/support/llama_cpp_references.h"
#include "tests/support/test_paths.h"
#include "trainer/config/run_config.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {

// A copy of a family fixture with the family's tokenizer and chat template, as a download has.
fs::path tiny_download(const std::string& fixture, const std::string& vocab,
                       const std::string& template_file) {
  const fs::path dir = testing::temp_dir("family_config_" + fixture);
  for (const char* file : {"config.json", "model.safetensors"})
    fs::copy_file(testing::fixture_path("families/" + fixture + "/" + file), dir / file);
  const auto v = models::gguf_vocabulary(models::read_gguf(testing::llama_cpp_reference(vocab)));
  write_file_atomically((dir / "tokenizer.json").string(), models::tokenizer_json(v).dump());
  write_file_atomically(
      (dir / "tokenizer_config.json").string(),
      models::tokenizer_config_json(
          v, read_file(testing::llama_cpp_reference("templates/" + template_file)), 4096)
          .dump());
  return dir;
}

}  // namespace

TEST_CASE("the Llama 3.1 and Qwen2.5 GPU configs validate with a tiny model of their family",
          "[families][config]") {
  struct Case {
    const char* config;
    const char* fixture;
    const char* vocab;
    const char* template_file;
    const char* format;
    std::vector<std::string> settings;
  };
  const Case cases[] = {
      {"llama3_8b_instruct_qlora",
       "llama3_rope",
       "ggml-vocab-llama-bpe.gguf",
       "meta-llama-Llama-3.1-8B-Instruct.jinja",
       "llama3",
       {"sft"}},
      {"qwen25_7b_instruct_sft_ppo",
       "qwen2",
       "ggml-vocab-qwen2.gguf",
       "Qwen-Qwen2.5-7B-Instruct.jinja",
       "qwen2",
       {"sft", "ppo", "sft+ppo"}},
  };
  // The configs' data paths are relative to the repository root.
  const auto previous = fs::current_path();
  fs::current_path(testing::source_path(""));
  struct Restore {
    fs::path dir;
    ~Restore() { fs::current_path(dir); }
  } restore{previous};
  for (const auto& c : cases) {
    INFO(c.config);
    const fs::path model = tiny_download(c.fixture, c.vocab, c.template_file);
    const std::string file = std::string("configs/synsciqa/") + c.config + ".yaml";
    const auto config = trainer::load_run_config(file, {"model.path=" + model.string()});
    CHECK(config.name == c.config);
    CHECK(config.device == trainer::Device::cuda);
    CHECK(config.model.dtype == trainer::Dtype::bfloat16);
    CHECK(config.model.quantization == trainer::Quantization::nf4);
    CHECK(config.settings == c.settings);
    CHECK(config.model.chat_format == c.format);
    CHECK(config.model.tokenizer == (model / "tokenizer.json").string());
    // Without the key, the model's own template gives the same format.
    CHECK(trainer::load_run_config(file, {"model.path=" + model.string(), "model.chat_format=\"\""})
              .model.chat_format == c.format);
    // The format's markers are tokens of the family's tokenizer.
    const models::Tokenizer tok(config.model.tokenizer);
    CHECK_FALSE(models::encode_chat_prompt(tok, models::chat_template(c.format), "Which document?")
                    .empty());
  }
}
