// Files from strangers, through the commands a user runs: each class of hostile input (GGUF and
// safetensors checkpoints, tokenizers, adapters, run configs, data files) given to `import`,
// `generate` or `run` must end the command with exit code 1 and exactly one error line naming
// the file and the field or tensor: no crash, no signal, no stack trace, no "internal error",
// and nothing written (no output directory, no work folder, nothing in the import cache).
// The readers' own tests check each message in detail; this one checks what the user sees.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_io.h"
#include "models/safetensors.h"
#include "tests/models/tiny_gguf.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The lines of `output` that carry an error, and whether anything looks like a crash.
void check_one_line_error(const testing::CliResult& r, const std::string& names) {
  INFO(r.output);
  CHECK_FALSE(r.killed);
  CHECK(r.exit_code == 1);
  int error_lines = 0;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.find("error:") != std::string::npos) ++error_lines;
  CHECK(error_lines == 1);
  for (const char* crash : {"internal error", "terminate called", "Exception raised from",
                            "frame #", "Segmentation", "AddressSanitizer", "std::bad_alloc"})
    CHECK(r.output.find(crash) == std::string::npos);
  CHECK(r.output.find(names) != std::string::npos);
}

void check_nothing_left(const fs::path& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    INFO(entry.path());
    CHECK(name.find(".importing") == std::string::npos);
    CHECK(name.find(".by-") == std::string::npos);
    CHECK(name.find(".exporting") == std::string::npos);
  }
}

std::string write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

// A tiny valid HF directory: the tiny GGUF's weights imported by the real importer.
fs::path valid_hf_dir(const fs::path& root) {
  const auto gguf = write(root / "valid.gguf", testing::TinyGguf().b.bytes());
  auto r = testing::run_citeforge("import gguf " + gguf + " --out " + (root / "valid").string() +
                                  " --dtype float32");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return root / "valid";
}

// A copy of `valid` whose model.safetensors header is replaced by `header` (data kept).
// A copy of the valid directory, for a case to spoil one file of.
fs::path copy_of(const fs::path& valid, const fs::path& dir) {
  fs::copy(valid, dir, fs::copy_options::recursive);
  return dir;
}

fs::path with_header(const fs::path& valid, const fs::path& dir, const json& header,
                     size_t data_bytes) {
  copy_of(valid, dir);
  const std::string text = header.dump();
  const uint64_t len = text.size();
  write(dir / "model.safetensors",
        std::string(reinterpret_cast<const char*>(&len), 8) + text + std::string(data_bytes, '\0'));
  return dir;
}

}  // namespace

TEST_CASE("hostile GGUF files: import and run end in one line naming the file, writing nothing",
          "[hostile][gguf]") {
  const fs::path root = testing::temp_dir("hostile_gguf");
  const fs::path cache = root / "cache";
  struct Case {
    std::string tag;
    std::string bytes;
    std::string names;  // what the error line must name besides the file
  };
  std::vector<Case> cases;
  const std::string good = testing::TinyGguf().b.bytes();
  cases.push_back({"magic", "GGML" + good.substr(4), "bad magic"});
  cases.push_back({"cut_header", good.substr(0, 40), "truncated"});
  cases.push_back({"cut_data", good.substr(0, good.size() - 100), "past the end of the file"});
  {
    testing::GgufBuilder b;
    b.str("general.architecture", "llama");
    b.tensor("huge", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, "");
    cases.push_back({"overflow", b.bytes(), "tensor 'huge'"});
  }
  {
    testing::GgufBuilder b;
    b.key("names", 9);
    testing::GgufBuilder::put<uint32_t>(b.kv, 8);
    testing::GgufBuilder::put<uint64_t>(b.kv, uint64_t{1} << 60);
    cases.push_back({"count", b.bytes(), "key 'names'"});
  }
  {
    testing::GgufBuilder b = testing::TinyGguf().b;
    b.u64("general.alignment", uint64_t{1} << 62);
    cases.push_back({"alignment", b.bytes(), "general.alignment"});
  }
  {
    testing::GgufBuilder b = testing::TinyGguf().b;
    b.tensor("blk.0.extra.weight", {256}, 12, std::string(144, '\0'));  // Q4_K
    cases.push_back({"kquant", b.bytes(), "blk.0.extra.weight"});
  }
  auto variant = [&](const std::string& tag, auto change, const std::string& names) {
    testing::TinyGgufOptions o;
    change(o);
    cases.push_back({tag, testing::TinyGguf(o).b.bytes(), names});
  };
  variant(
      "layers", [](auto& o) { o.block_count = 4000000000u; }, "4000000000 layers");
  variant(
      "width", [](auto& o) { o.embedding_length = 16; }, "model.embed_tokens.weight");
  variant(
      "missing", [](auto& o) { o.without_ffn_down = true; }, "mlp.down_proj.weight");
  variant(
      "heads", [](auto& o) { o.head_count = 3; }, "llama.attention.head_count");
  variant(
      "nan", [](auto& o) { o.nan_in_up = true; }, "blk.0.ffn_up.weight");
  for (const auto& c : cases) {
    INFO(c.tag);
    const auto file = write(root / (c.tag + ".gguf"), c.bytes);
    const fs::path out = root / ("imported_" + c.tag);
    auto imported = testing::run_citeforge("import gguf " + file + " --out " + out.string());
    check_one_line_error(imported, c.names);
    CHECK(imported.output.find(file) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
    // The same file named by a run: refused before anything lands in the import cache.
    auto run = testing::run_citeforge(
        "run tests/fixtures/configs/tiny.yaml --out " + (root / ("run_" + c.tag)).string() +
            " --set model.build=null --set model.tokenizer_vocab=0 --set pretrain.enabled=false" +
            " --set model.chat_format=chatml" + " --set model.path=" + file,
        "CITEFORGE_CACHE=" + cache.string());
    check_one_line_error(run, c.names);
    CHECK_FALSE(fs::exists(root / ("run_" + c.tag)));  // refused before the run directory
    if (fs::exists(cache / "imported")) CHECK(fs::is_empty(cache / "imported"));
  }
  check_nothing_left(root);
}

TEST_CASE("hostile safetensors checkpoints: generate ends in one line naming file and tensor",
          "[hostile][safetensors]") {
  const fs::path root = testing::temp_dir("hostile_safetensors");
  const fs::path valid = valid_hf_dir(root);
  const auto checkpoint = models::open_safetensors((valid / "model.safetensors").string());
  json header = json::object();
  size_t data = 0;
  for (const auto& name : checkpoint.names()) {
    const auto& t = checkpoint.tensors.at(name);
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
    data = std::max(data, t.end);
  }
  const std::string embed = "model.embed_tokens.weight";
  std::string later;  // a tensor that does not start the data section
  for (const auto& name : checkpoint.names())
    if (checkpoint.tensors.at(name).begin > 0) later = name;
  const auto& moved = checkpoint.tensors.at(later);
  struct Case {
    std::string tag;
    fs::path dir;
    std::string names;
  };
  std::vector<Case> cases;
  auto changed = [&](const std::string& tag, auto change, size_t bytes, const std::string& names) {
    json h = header;
    change(h);
    cases.push_back({tag, with_header(valid, root / tag, h, bytes), names});
  };
  changed(
      "overlap",
      [&](json& h) {
        h[later]["data_offsets"] = {0, moved.end - moved.begin};
      },
      data, "overlap");
  changed(
      "shape", [&](json& h) { h[embed]["shape"][0] = 7; }, data, embed);
  changed(
      "dtype", [&](json& h) { h[embed]["dtype"] = "F8_E4M3"; }, data, embed);
  changed(
      "truncated", [](json&) {}, data - 16, "truncated");
  changed(
      "trailing", [](json&) {}, data + 8, "data section");
  changed(
      "not_object",
      [](json& h) {
        h = json::array({1, 2});
      },
      data, "expected a JSON object");
  {
    const fs::path dir = root / "length";
    with_header(valid, dir, header, data);
    std::string bytes = read_file((dir / "model.safetensors").string());
    const uint64_t absurd = uint64_t{1} << 60;
    bytes.replace(0, 8, std::string(reinterpret_cast<const char*>(&absurd), 8));
    write(dir / "model.safetensors", bytes);
    cases.push_back({"length", dir, "header length"});
  }
  {
    const fs::path dir = root / "layers";
    copy_of(valid, dir);
    auto config = json::parse(read_file((valid / "config.json").string()));
    config["num_hidden_layers"] = 4000000000LL;
    write(dir / "config.json", config.dump());
    cases.push_back({"layers", dir, "num_hidden_layers"});
  }
  {
    const fs::path dir = root / "index";
    with_header(valid, dir, header, data);
    fs::rename(dir / "model.safetensors", dir / "model-00001-of-00001.safetensors");
    json index = {{"weight_map", json::object()}};
    for (const auto& name : checkpoint.names())
      index["weight_map"][name] = "model-00001-of-00001.safetensors";
    index["weight_map"][embed] = "../valid/model.safetensors";
    write(dir / "model.safetensors.index.json", index.dump());
    cases.push_back({"index_escape", dir, "not a file name in the index's directory"});
  }
  {
    const fs::path dir = root / "tokenizer";
    copy_of(valid, dir);
    auto tok = json::parse(read_file((valid / "tokenizer.json").string()));
    tok["normalizer"] = {{"type", "NFKD"}};
    write(dir / "tokenizer.json", tok.dump());
    cases.push_back({"normalizer", dir, "field 'normalizer'"});
  }
  {
    // A SentencePiece model that is not one (tokenizer.model is preferred to tokenizer.json).
    const fs::path dir = root / "sentencepiece";
    copy_of(valid, dir);
    write(dir / "tokenizer.model", std::string("\x0a\xff\xff\xff\xff\x0f garbage", 14));
    cases.push_back({"sentencepiece", dir, "tokenizer.model"});
  }
  for (const auto& c : cases) {
    INFO(c.tag);
    auto r = testing::run_citeforge("generate --model " + c.dir.string() +
                                    " --prompt hello --max-new-tokens 2 --greedy");
    check_one_line_error(r, c.names);
  }
  check_nothing_left(root);
}

TEST_CASE("hostile adapters, run configs and data files end in one line naming file and field",
          "[hostile][adapter][config][data]") {
  const fs::path root = testing::temp_dir("hostile_other");
  const fs::path valid = valid_hf_dir(root);
  // Adapters: an absurd rank, a negative alpha, a tensor of the wrong shape.
  const fs::path adapter = root / "adapter";
  auto make_adapter = [&](const json& config, int64_t rank) {
    fs::remove_all(adapter);
    fs::create_directories(adapter);
    write(adapter / "adapter_config.json", config.dump());
    const std::string prefix = "base_model.model.model.layers.0.self_attn.q_proj.";
    models::write_safetensors((adapter / "adapter_model.safetensors").string(),
                              {{prefix + "lora_A.weight", torch::zeros({rank, 8})},
                               {prefix + "lora_B.weight", torch::zeros({8, rank})}});
  };
  const json lora = {
      {"peft_type", "LORA"}, {"r", 2}, {"lora_alpha", 4}, {"target_modules", {"q_proj"}}};
  auto generate_with_adapter = [&] {
    return testing::run_citeforge("generate --model " + valid.string() + " --adapter " +
                                  adapter.string() + " --prompt hello --max-new-tokens 2");
  };
  json absurd = lora;
  absurd["r"] = 1LL << 40;
  make_adapter(absurd, 2);
  check_one_line_error(generate_with_adapter(), "lora_A.weight");
  json negative = lora;
  negative["lora_alpha"] = -1;
  make_adapter(negative, 2);
  check_one_line_error(generate_with_adapter(), "field 'lora_alpha'");
  make_adapter(lora, 3);
  check_one_line_error(generate_with_adapter(), "lora_A.weight");

  // Run configs: an unknown key, a wrong type, a repeated key, nesting deep enough to exhaust a
  // recursive parser.
  auto run_config = [&](const std::string& tag, const std::string& yaml) {
    const auto file = write(root / (tag + ".yaml"), yaml);
    return std::make_pair(
        file, testing::run_citeforge("run " + file + " --out " + (root / ("run_" + tag)).string()));
  };
  const std::string tiny = read_file(testing::source_path("tests/fixtures/configs/tiny.yaml"));
  {
    auto [file, r] = run_config("unknown", tiny + "sft_typo: {epochs: 1}\n");
    check_one_line_error(r, "sft_typo");
    CHECK(r.output.find(file) != std::string::npos);
  }
  {
    std::string typed = tiny;
    typed.replace(typed.find("threads: 1"), 10, "threads: many");
    auto [file, r] = run_config("type", typed);
    check_one_line_error(r, "threads");
  }
  {
    // A complex key, valid YAML (the run-config fuzzer's find: yaml-cpp's exception escaped).
    auto [file, r] = run_config("complex_key", tiny + "? [a, b]\n: 1\n");
    check_one_line_error(r, "a key must be a plain name");
  }
  {
    // A repeated key: yaml-cpp keeps both and reads the first, so the second would be ignored.
    auto [file, r] = run_config("twice", tiny + "threads: 2\n");
    check_one_line_error(r, "given twice");
  }
  {
    auto [file, r] = run_config("deep", std::string(100000, '[') + std::string(100000, ']'));
    check_one_line_error(r, file);
  }
  // Data files: a JSONL line that is not JSON, a CSV with an unterminated quote.
  const auto jsonl = write(root / "bad.jsonl", "{\"id\": \"q1\"}\nnot json\n");
  auto bad_jsonl =
      testing::run_citeforge("run tests/fixtures/configs/tiny.yaml --out " +
                             (root / "run_jsonl").string() + " --set data.train=" + jsonl);
  check_one_line_error(bad_jsonl, "bad.jsonl");
  const auto csv = write(root / "bad.csv", "question,answer\n\"open quote,x\n");
  auto bad_csv = testing::run_citeforge(
      "run tests/fixtures/configs/tiny.yaml --out " + (root / "run_csv").string() +
      " --set 'data.test_sets=[{name: validation, path: " + csv + "}]'");
  check_one_line_error(bad_csv, "bad.csv");
  check_nothing_left(root);
}
