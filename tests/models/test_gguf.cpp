#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "models/base_card.h"
#include "models/chat_format.h"
#include "models/checkpoint_io.h"
#include "models/gguf.h"
#include "models/gguf_dequantize.h"
#include "models/gguf_export.h"
#include "models/gguf_import.h"
#include "models/tokenizer.h"
#include "tests/models/byte_level_tokens.h"
#include "tests/models/gguf_builder.h"
#include "tests/models/tiny_gguf.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;
using testing::GgufBuilder;
using testing::llama_cpp_permute;
using testing::TinyGguf;
using testing::TinyGgufOptions;
using testing::values_of;
namespace fs = std::filesystem;

namespace {

std::string write_temp(const std::string& tag, const std::string& bytes) {
  auto path = (testing::temp_dir(tag) / "model.gguf").string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string u16_bytes(std::initializer_list<uint16_t> values) {
  std::string out;
  for (auto v : values) GgufBuilder::put<uint16_t>(out, v);
  return out;
}

// Imports `b` written to ROOT/TAG.gguf into ROOT/TAG, which must fail with one line naming the
// file and leave nothing behind (neither the output nor a work folder); returns the message.
std::string refused_import(const fs::path& root, const GgufBuilder& b, const std::string& tag) {
  const auto path = (root / (tag + ".gguf")).string();
  std::ofstream(path, std::ios::binary) << b.bytes();
  const auto out = (root / tag).string();
  std::string message;
  try {
    models::import_gguf(path, out);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_FALSE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(root))
    CHECK(entry.path().filename().string().find("importing") == std::string::npos);
  CHECK_THAT(message, Contains(path));
  CHECK(message.find('\n') == std::string::npos);  // one line
  return message;
}

}  // namespace

TEST_CASE("GGUF metadata and each supported tensor type dequantise to the values they encode",
          "[models][gguf]") {
  GgufBuilder b;
  b.str("general.architecture", "llama");
  b.u32("answer", 42);
  b.f32("pi", 3.5f);
  b.boolean("yes", true);
  b.strings("names", {"a", "bc"});
  b.f32_tensor("f32", {3, 2}, {1, 2, 3, 4, 5, 6});
  b.tensor("f16", {2}, 1, u16_bytes({0x3C00, 0xC000}));    // 1, -2
  b.tensor("bf16", {2}, 30, u16_bytes({0x3F80, 0x3F00}));  // 1, 0.5
  std::string q4_0 = u16_bytes({0x3800}), q4_1 = u16_bytes({0x3400, 0xBC00}),
              q8_0 = u16_bytes({0x3000});  // d = 0.5; d = 0.25, m = -1; d = 0.125
  for (int j = 0; j < 16; ++j) q4_0 += char(j | ((15 - j) << 4)), q4_1 += char(j | ((15 - j) << 4));
  for (int j = 0; j < 32; ++j) q8_0 += char(static_cast<int8_t>(j - 16));
  b.tensor("q4_0", {32}, 2, q4_0);
  b.tensor("q4_1", {32}, 3, q4_1);
  b.tensor("q8_0", {32}, 8, q8_0);
  auto file = models::read_gguf(write_temp("gguf_types", b.bytes()));
  CHECK(file.version == 3);
  CHECK(file.at("answer").integer("answer") == 42);
  CHECK(file.at("pi").number("pi") == 3.5);
  CHECK(file.at("yes").boolean("yes"));
  CHECK(file.at("names").array("names").at(1).string("names") == "bc");
  CHECK_THROWS_WITH(file.at("missing"), Contains("missing metadata key 'missing'"));

  auto f32 = models::dequantize(file, *file.find("f32"));
  CHECK(f32.sizes() == torch::IntArrayRef({2, 3}));  // ggml [3, 2] is 2 rows of 3
  CHECK(values_of(f32) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(values_of(models::dequantize(file, *file.find("f16"))) == std::vector<float>{1, -2});
  CHECK(values_of(models::dequantize(file, *file.find("bf16"))) == std::vector<float>{1, 0.5});
  auto v4_0 = values_of(models::dequantize(file, *file.find("q4_0")));
  auto v4_1 = values_of(models::dequantize(file, *file.find("q4_1")));
  auto v8_0 = values_of(models::dequantize(file, *file.find("q8_0")));
  for (int j = 0; j < 16; ++j) {
    CHECK(v4_0[j] == (j - 8) * 0.5f);
    CHECK(v4_0[j + 16] == (15 - j - 8) * 0.5f);
    CHECK(v4_1[j] == j * 0.25f - 1.0f);
    CHECK(v4_1[j + 16] == (15 - j) * 0.25f - 1.0f);
  }
  for (int j = 0; j < 32; ++j) CHECK(v8_0[j] == (j - 16) * 0.125f);
  // A slice of rows is those rows of the whole.
  CHECK(torch::equal(models::dequantize_rows(file, *file.find("f32"), 1, 2), f32.slice(0, 1, 2)));
  CHECK(models::tensor_rows(*file.find("f32")) == 2);
  CHECK_THROWS_WITH(models::dequantize_rows(file, *file.find("f32"), 1, 3),
                    Contains("tensor 'f32'") && Contains("outside its 2"));
}

TEST_CASE("broken GGUF files are one clear error naming the file", "[models][gguf][errors]") {
  GgufBuilder b;
  b.str("general.architecture", "llama");
  b.f32_tensor("w", {32}, std::vector<float>(32, 1.0f));
  b.tensor("k_quant", {256}, 12, std::string(144, '\0'));  // Q4_K
  const std::string good = b.bytes();

  const auto magic = write_temp("gguf_magic", "GGML" + good.substr(4));
  CHECK_THROWS_WITH(models::read_gguf(magic), Contains(magic) && Contains("bad magic"));

  GgufBuilder v1 = b;
  v1.version = 1;
  CHECK_THROWS_WITH(models::read_gguf(write_temp("gguf_v1", v1.bytes())),
                    Contains("unsupported GGUF version 1"));

  const auto cut_header = write_temp("gguf_cut_header", good.substr(0, 40));
  CHECK_THROWS_WITH(models::read_gguf(cut_header), Contains(cut_header) && Contains("truncated"));

  // Cut into w's data (k_quant's 144 bytes come after it).
  const auto cut_data = write_temp("gguf_cut_data", good.substr(0, good.size() - 150));
  CHECK_THROWS_WITH(models::read_gguf(cut_data),
                    Contains("tensor 'w'") && Contains("past the end of the file"));

  const auto path = write_temp("gguf_kquant", good);
  auto file = models::read_gguf(path);
  CHECK_THROWS_WITH(
      models::dequantize(file, *file.find("k_quant")),
      Contains(path) && Contains("tensor 'k_quant'") && Contains("unsupported tensor type Q4_K"));

  CHECK_THROWS_WITH(models::read_gguf(path + ".absent"), Contains(".absent"));

  // Directory entries a crafted file can hold: sizes whose product overflows, a name given twice,
  // an alignment so large that the data section's start would overflow.
  GgufBuilder overflow;
  overflow.tensor("huge", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, "");
  CHECK_THROWS_WITH(
      models::parse_gguf(overflow.bytes(), "overflow.gguf"),
      Contains("overflow.gguf") && Contains("tensor 'huge'") && Contains("product overflows"));
  GgufBuilder many;  // 2^24 + 1 bytes, all present: a gigabyte of parsed values before
  many.key("bytes", 9);
  GgufBuilder::put<uint32_t>(many.kv, 0);
  GgufBuilder::put<uint64_t>(many.kv, (uint64_t{1} << 24) + 1);
  many.kv += std::string((size_t{1} << 24) + 1, '\1');
  CHECK_THROWS_WITH(models::parse_gguf(many.bytes(), "many.gguf"),
                    Contains("key 'bytes'") && Contains("at most 2^24"));
  GgufBuilder short_strings;  // fewer bytes than 8 per claimed string
  short_strings.key("names", 9);
  GgufBuilder::put<uint32_t>(short_strings.kv, 8);
  GgufBuilder::put<uint64_t>(short_strings.kv, 100);
  short_strings.kv += std::string(120, '\0');
  CHECK_THROWS_WITH(models::parse_gguf(short_strings.bytes(), "short.gguf"),
                    Contains("short.gguf") && Contains("truncated"));
  GgufBuilder twice;
  twice.f32_tensor("w", {1}, {1.0f});
  twice.f32_tensor("w", {1}, {2.0f});
  CHECK_THROWS_WITH(models::parse_gguf(twice.bytes(), "twice.gguf"),
                    Contains("tensor 'w'") && Contains("appears twice"));
  GgufBuilder aligned;
  aligned.u64("general.alignment", uint64_t{1} << 62);
  CHECK_THROWS_WITH(models::parse_gguf(aligned.bytes(), "aligned.gguf"),
                    Contains("general.alignment") && Contains("up to 16 MiB"));
  // Parsed from memory, a file has its directory but no data to read.
  const auto parsed = models::parse_gguf(good, "memory");
  CHECK(parsed.tensors.size() == 2);
  CHECK_THROWS_WITH(models::dequantize(parsed, parsed.tensors[0]), Contains("parsed, not mapped"));
}

TEST_CASE("a GGUF Llama imports to an HF directory with q/k rows in HF order",
          "[models][gguf][import]") {
  TinyGguf tiny;
  const auto path = write_temp("gguf_import", tiny.b.bytes());
  const auto out = (testing::temp_dir("gguf_import_out") / "model").string();
  models::import_gguf(path, out);

  auto config = models::read_model_config(out + "/config.json");
  CHECK(config.num_layers == 1);
  CHECK(config.num_heads == 2);
  CHECK(config.num_kv_heads == 1);
  CHECK(config.head_dim == 4);
  CHECK(config.tie_word_embeddings);  // no output.weight
  CHECK(config.vocab_size == 260);
  auto checkpoint = models::open_safetensors(out);
  for (const auto& [name, expected] : tiny.hf) {
    INFO(name);
    REQUIRE(checkpoint.contains(name));
    CHECK(torch::equal(checkpoint.get(name), expected));
  }
  CHECK(models::load_model(out)->config.hidden_size == 8);

  // The written tokenizer.json reads back to the same tokenizer as the GGUF's metadata.
  models::Tokenizer from_dir(out);
  models::Tokenizer from_gguf(models::gguf_vocabulary(models::read_gguf(path)), path);
  CHECK(from_dir.kind() == "bpe");
  for (std::string text : {"the thing", " th t", "<|im_start|>the<|im_end|>", "x12 y"}) {
    INFO(text);
    CHECK(from_dir.encode(text, false, false, true) == from_gguf.encode(text, false, false, true));
    CHECK(from_dir.decode(from_dir.encode(text, false, false, true)) == text);
  }
  CHECK(from_dir.encode(" th", false, false) == std::vector<int64_t>{257});
  CHECK(from_dir.bos_id() == 258);
  CHECK(from_dir.eos_id() == 259);
  CHECK_FALSE(from_dir.adds_bos());
  auto tokenizer_config = nlohmann::json::parse(read_file(out + "/tokenizer_config.json"));
  CHECK(tokenizer_config["chat_template"] == "{{ messages }}");
  CHECK(tokenizer_config["eos_token"] == "<|im_end|>");
  // The GGUF's name and licence travel in the directory's README.md, for exports' model cards.
  const auto base = models::read_base_facts(out);
  CHECK(base.name == "Tiny Llama");
  CHECK(base.license == "apache-2.0");
  CHECK(base.hub_id.empty());
}

TEST_CASE("GGUF import writes the weights in the type asked for", "[models][gguf][import]") {
  TinyGguf tiny;
  const auto path = write_temp("gguf_import_dtype", tiny.b.bytes());
  const auto root = testing::temp_dir("gguf_import_dtype_out");
  models::import_gguf(path, (root / "bf16").string(), nullptr, models::NonFiniteWeights::error,
                      models::ImportDtype::bfloat16);
  auto checkpoint = models::open_safetensors((root / "bf16").string());
  for (const auto& [name, expected] : tiny.hf) {
    INFO(name);
    CHECK(torch::equal(checkpoint.get(name), expected.to(torch::kBFloat16)));
  }
  CHECK(models::read_model_config((root / "bf16" / "config.json").string()).dtype == "bfloat16");
  CHECK(models::load_model((root / "bf16").string())->config.hidden_size == 8);
  // The source's own type: these tensors are all F32, so the file is the fp32 import's.
  models::import_gguf(path, (root / "source").string());
  models::import_gguf(path, (root / "fp32").string(), nullptr, models::NonFiniteWeights::error,
                      models::ImportDtype::float32);
  CHECK(read_file((root / "source" / "model.safetensors").string()) ==
        read_file((root / "fp32" / "model.safetensors").string()));
  CHECK(models::import_dtype_by_name("float32", "x") == models::ImportDtype::float32);
  CHECK_THROWS_WITH(models::import_dtype_by_name("fp8", "import: --dtype"),
                    Contains("import: --dtype") && Contains("'fp8'") && Contains("bfloat16"));
}

TEST_CASE("GGUF import refuses other architectures, tokenizers and tensors, writing nothing",
          "[models][gguf][import][errors]") {
  const auto root = testing::temp_dir("gguf_import_errors");
  auto import_error = [&](const GgufBuilder& b, const std::string& tag) {
    return refused_import(root, b, tag);
  };
  {
    TinyGguf t;
    t.b.str("general.architecture", "gpt2");  // a second key of the same name
    CHECK_THAT(import_error(t.b, "twice"), Contains("appears twice"));
  }
  {
    TinyGguf t;
    GgufBuilder other = t.b;
    other.kv.clear();
    other.kv_count = 0;
    other.str("general.architecture", "falcon");
    CHECK_THAT(import_error(other, "falcon"), Contains("unsupported architecture 'falcon'"));
  }
  {
    TinyGguf t;
    t.b.tensor("blk.0.attn_qkv.weight", {8}, 0, std::string(32, '\0'));
    CHECK_THAT(import_error(t.b, "fused"),
               Contains("tensor 'blk.0.attn_qkv.weight'") && Contains("not part of a Llama"));
  }
  {
    TinyGguf t;
    t.b.tensor("output.weight", {256, 260}, 12, std::string(144 * 260, '\0'));  // Q4_K head
    CHECK_THAT(import_error(t.b, "kquant"),
               Contains("tensor 'output.weight'") && Contains("unsupported tensor type Q4_K"));
  }
  // An existing non-empty output directory is refused before anything is read.
  TinyGguf t;
  const auto path = (root / "ok.gguf").string();
  std::ofstream(path, std::ios::binary) << t.b.bytes();
  fs::create_directories(root / "full");
  std::ofstream(root / "full" / "keep.txt") << "x";
  CHECK_THROWS_WITH(models::import_gguf(path, (root / "full").string()),
                    Contains("exists and is not empty"));
  CHECK(fs::exists(root / "full" / "keep.txt"));
}

TEST_CASE("GGUF metadata that contradicts its tensors, and NaN weights, import nothing",
          "[models][gguf][import][errors]") {
  const auto root = testing::temp_dir("gguf_hostile");
  auto import_error = [&](const TinyGgufOptions& options, const std::string& tag) {
    return refused_import(root, TinyGguf(options).b, tag);
  };
  TinyGgufOptions layers;
  layers.block_count = 4000000000u;  // far beyond the tensors: once a bad_alloc
  CHECK_THAT(import_error(layers, "layers"), Contains("4000000000 layers") && Contains("too few"));
  TinyGgufOptions width;
  width.embedding_length = 16;
  CHECK_THAT(import_error(width, "width"),
             Contains("tensor 'model.embed_tokens.weight'") && Contains("does not match"));
  TinyGgufOptions missing;
  missing.without_ffn_down = true;
  CHECK_THAT(import_error(missing, "missing"),
             Contains("tensor 'model.layers.0.mlp.down_proj.weight'") && Contains("missing"));
  TinyGgufOptions heads;
  heads.head_count = 3;  // does not divide the width 8: once LibTorch's trace
  CHECK_THAT(import_error(heads, "heads"),
             Contains("llama.attention.head_count") && Contains("does not divide"));
  TinyGgufOptions nan;
  nan.nan_in_up = true;
  CHECK_THAT(import_error(nan, "nan"),
             Contains("tensor 'blk.0.ffn_up.weight'") && Contains("1 of its 128 values are NaN"));
  // Asked to warn, the same file imports (the NaN kept as it is) and loads under the same choice;
  // the default loader still refuses what was imported.
  const auto path = (root / "nan_warned.gguf").string();
  std::ofstream(path, std::ios::binary) << TinyGguf(nan).b.bytes();
  const auto out = (root / "nan_warned").string();
  models::import_gguf(path, out, nullptr, models::NonFiniteWeights::warn);
  models::LoadOptions warn;
  warn.non_finite = models::NonFiniteWeights::warn;
  auto model = models::load_model(out, warn);
  CHECK(model->named_parameters()["model.layers.0.mlp.up_proj.weight"]
            .isnan()
            .sum()
            .item<int64_t>() == 1);
  CHECK_THROWS_WITH(models::load_model(out),
                    Contains("tensor 'model.layers.0.mlp.up_proj.weight'") && Contains("NaN"));
}

TEST_CASE("an import killed midway leaves a folder the next import removes",
          "[models][gguf][import]") {
  const auto root = testing::temp_dir("gguf_abandoned");
  // A process id that is not running: the highest ones are the least likely to be taken.
  pid_t gone = 4194000;
  while (::kill(gone, 0) == 0 || errno != ESRCH) --gone;
  const auto abandoned = root / (".model.importing-" + std::to_string(gone));
  fs::create_directories(abandoned);
  std::ofstream(abandoned / "model.safetensors") << "half";
  TinyGguf t;
  const auto path = (root / "ok.gguf").string();
  std::ofstream(path, std::ios::binary) << t.b.bytes();
  models::import_gguf(path, (root / "model").string());
  CHECK_FALSE(fs::exists(abandoned));
  CHECK(fs::exists(root / "model" / "model.safetensors"));
}

TEST_CASE("a model exports to a GGUF that reads back as the file it was imported from",
          "[models][gguf][export]") {
  TinyGguf tiny;
  const auto original = write_temp("gguf_export_src", tiny.b.bytes());
  const auto root = testing::temp_dir("gguf_export");
  const auto imported = (root / "model").string();
  models::import_gguf(original, imported);
  auto model = models::load_model(imported);
  const auto source = models::read_gguf(original);
  for (const auto type :
       {models::GgufExportType::f16, models::GgufExportType::bf16, models::GgufExportType::q8_0}) {
    const auto exported = (root / ("out" + std::to_string(int(type)) + ".gguf")).string();
    models::export_gguf(model, imported, exported, type);
    const auto file = models::read_gguf(exported);
    CHECK(file.at("general.name").string("") == "Tiny Llama");
    CHECK(file.at("tokenizer.ggml.pre").string("") == "smollm");
    // Every tensor in llama.cpp's name and row order, within the type's rounding; norms in F32.
    REQUIRE(file.tensors.size() == source.tensors.size());
    for (const auto& t : source.tensors) {
      INFO(t.name);
      const auto* out = file.find(t.name);
      REQUIRE(out);
      const auto want = models::dequantize(source, t), got = models::dequantize(file, *out);
      REQUIRE(got.sizes() == want.sizes());
      if (t.dims.size() == 1) CHECK(out->type == uint32_t(models::GgmlType::kF32));
      const double tolerance = type == models::GgufExportType::f16 ? 2e-3 : 2e-2;
      CHECK((got - want).abs().max().item<double>() <= tolerance * want.abs().max().item<double>());
    }
    // The exported vocabulary is the imported one (the tiny vocab fills the embedding rows).
    const auto a = models::gguf_vocabulary(source), b = models::gguf_vocabulary(file);
    CHECK(a.tokens == b.tokens);
    CHECK(a.merges == b.merges);
    CHECK(a.bos_id == b.bos_id);
    CHECK(a.eos_id == b.eos_id);
    CHECK(a.added.size() == b.added.size());
  }
  CHECK_THROWS_WITH(models::gguf_export_type("q4_k"), Contains("f16, bf16 or q8_0"));
}
