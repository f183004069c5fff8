// A tiny QLoRA SFT + PPO run, then a peft export, on each newer family: Llama 3 (its llama3 RoPE
// scaling), Qwen2.5 (q/k/v biases, tied output) and Qwen3 (q/k norms, wide heads), each through
// its own chat format. The model is the family fixture (tests/fixtures/families/, written by
// transformers) with its embedding widened to a byte-level vocabulary carrying the family's
// special tokens, and its context lengthened so the tiny world's prompts fit: the code paths
// that make these families differ from plain Llama run under NF4, LoRA, the value head and PPO.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/file_io.h"
#include "models/bpe_tokenizer.h"
#include "models/safetensors.h"
#include "tests/models/byte_level_tokens.h"
#include "tests/models/family_gguf.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Family {
  const char* fixture;
  const char* arch;  // llama.cpp's architecture name
  const char* chat_format;
  std::vector<std::string> specials;  // the first is BOS for Llama 3; the last is EOS
  bool has_bos;
};

// The fixture with a 256-byte vocabulary plus the family's special tokens (new embedding rows
// drawn like the fixture's own, N(0, 0.1^2)), and a 2048-token context.
fs::path widened_model(const Family& f, const fs::path& dir) {
  const std::string source = testing::fixture_path(std::string("families/") + f.fixture);
  models::BpeVocabulary v;
  v.tokens = testing::byte_level_tokens();
  for (const auto& s : f.specials) {
    v.added.push_back({static_cast<int64_t>(v.tokens.size()), s, true});
    v.tokens.push_back(s);
  }
  v.pre_tokenizer = {{models::kGpt2Pattern, "ByteLevel"}};
  v.eos_id = static_cast<int64_t>(v.tokens.size()) - 1;
  v.bos_id = f.has_bos ? 256 : -1;
  v.add_bos = f.has_bos;
  const auto vocab = static_cast<int64_t>(v.tokens.size());
  fs::create_directories(dir);
  write_file_atomically((dir / "tokenizer.json").string(), models::tokenizer_json(v).dump());
  write_file_atomically((dir / "tokenizer_config.json").string(),
                        models::tokenizer_config_json(v, "", 2048).dump());

  auto config = json::parse(read_file(source + "/config.json"));
  config["vocab_size"] = vocab;
  config["max_position_embeddings"] = 2048;
  config["bos_token_id"] = v.bos_id < 0 ? json(nullptr) : json(v.bos_id);
  config["eos_token_id"] = v.eos_id;
  write_file_atomically((dir / "config.json").string(), config.dump(2));

  torch::manual_seed(7);
  const auto weights = models::open_safetensors(source + "/model.safetensors");
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& name : weights.names()) {
    torch::Tensor t = weights.get(name).clone();
    if (name == "model.embed_tokens.weight" || name == "lm_head.weight")
      t = torch::cat({t, 0.1 * torch::randn({vocab - t.size(0), t.size(1)})});
    tensors.emplace_back(name, t);
  }
  models::write_safetensors((dir / "model.safetensors").string(), tensors);
  return dir;
}

// The tiny run in the family's chat format, then its PPO checkpoint exported for peft and used
// by `generate` on the same base.
void run_and_export(const Family& f, const fs::path& model, const fs::path& root) {
  const fs::path out = root / "run";
  // A GGUF written afresh by every test run has a new modification time, which the import cache
  // keys on: imported into the user's cache, each run would leave another copy there.
  const std::string cache = "CITEFORGE_CACHE=" + (root / "cache").string();
  auto run = testing::run_citeforge(
      "run tests/fixtures/configs/tiny.yaml --out " + out.string() +
          " --set model.build=null --set model.tokenizer_vocab=0 --set pretrain.enabled=false"
          " --set model.path=" +
          model.string() +
          " --set model.quantization=nf4 --set model.chat_format=" + f.chat_format +
          " --set 'settings=[sft, sft+ppo]' --set sft.epochs=1 --set ppo.iterations=2"
          " --set ppo.eval_every=2",
      cache);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("policy: NF4 base") != std::string::npos);
  const auto results = json::parse(read_file((out / "results.json").string()));
  CHECK(results.dump().find("sft+ppo") != std::string::npos);
  CHECK(fs::exists(out / "checkpoints/sft+ppo-1/adapter_model.safetensors"));
  const fs::path peft = root / "peft";
  auto exported =
      testing::run_citeforge("export --checkpoint " + (out / "checkpoints/sft+ppo-1").string() +
                                 " --format peft --out " + peft.string(),
                             cache);
  INFO(exported.output);
  REQUIRE(exported.exit_code == 0);
  auto generated = testing::run_citeforge(
      "generate --model " + model.string() + " --adapter " + peft.string() + " --chat " +
          f.chat_format + " --prompt 'Which document?' --greedy --max-new-tokens 4",
      cache);
  INFO(generated.output);
  CHECK(generated.exit_code == 0);
}

}  // namespace

TEST_CASE("a tiny QLoRA SFT + PPO run and a peft export on Llama 3, Qwen2.5 and Qwen3",
          "[families][pipeline]") {
  const Family families[] = {
      {"llama3_rope",
       "llama",
       "llama3",
       {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
       true},
      {"qwen2", "qwen2", "qwen2", {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}, false},
      {"qwen3",
       "qwen3",
       "qwen3",
       {"<|endoftext|>", "<|im_start|>", "<think>", "</think>", "<|im_end|>"},
       false},
  };
  // The same run from the HF directory and from a GGUF file of it (llama.cpp's layout, the
  // family's special tokens as control tokens).
  for (const auto& f : families) {
    for (const bool gguf : {false, true}) {
      INFO(f.fixture << (gguf ? " from GGUF" : " from HF"));
      const fs::path root =
          testing::temp_dir(std::string("family_run_") + f.fixture + (gguf ? "_gguf" : ""));
      fs::path model = widened_model(f, root / "model");
      if (gguf)
        model = testing::family_gguf(testing::fixture_path(std::string("families/") + f.fixture),
                                     f.fixture, f.arch, f.specials, f.has_bos ? 0 : -1,
                                     int64_t(f.specials.size()) - 1, 2048);
      run_and_export(f, model, root);
    }
  }
}
