#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "models/checkpoint_io.h"
#include "models/safetensors.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::string write_sample(const fs::path& dir) {
  auto path = (dir / "sample.safetensors").string();
  models::write_safetensors(path,
                            {{"a", torch::arange(6, torch::kFloat32).view({2, 3})},
                             {"b", torch::tensor({1.5, -2.0}, torch::kBFloat16)},
                             {"ids", torch::tensor({7, 8, 9}, torch::kInt64)}},
                            {{"format", "pt"}});
  return path;
}

// Rewrites the 8-byte header length of a file.
void patch_header_length(const std::string& path, uint64_t len) {
  std::string bytes = read_file(path);
  std::memcpy(bytes.data(), &len, 8);
  std::ofstream(path, std::ios::binary) << bytes;
}

// A safetensors file with this JSON header and `data` bytes after it.
std::string write_raw(const fs::path& dir, const std::string& header, size_t data) {
  const auto path = (dir / "raw.safetensors").string();
  std::string bytes(8, '\0');
  const uint64_t length = header.size();
  std::memcpy(bytes.data(), &length, 8);
  std::ofstream(path, std::ios::binary) << bytes << header << std::string(data, '\0');
  return path;
}

}  // namespace

TEST_CASE("safetensors round-trips F32, BF16 and I64 tensors", "[models][safetensors]") {
  auto dir = testing::temp_dir("st");
  auto ckpt = models::open_safetensors(write_sample(dir));
  CHECK(ckpt.names() == std::vector<std::string>{"a", "b", "ids"});
  CHECK(ckpt.metadata.at("format") == "pt");
  CHECK(torch::equal(ckpt.get("a"), torch::arange(6, torch::kFloat32).view({2, 3})));
  CHECK(ckpt.get("b").scalar_type() == torch::kBFloat16);
  CHECK(ckpt.get("b")[1].item<float>() == -2.0f);
  CHECK(ckpt.get("ids")[2].item<int64_t>() == 9);
}

TEST_CASE("tensors view the mapping and outlive the checkpoint object", "[models][safetensors]") {
  auto dir = testing::temp_dir("st");
  torch::Tensor a;
  {
    auto ckpt = models::open_safetensors(write_sample(dir));
    a = ckpt.get("a");
  }
  CHECK(a.sum().item<float>() == 15.0f);
}

TEST_CASE("damaged safetensors files give errors naming file and tensor",
          "[models][safetensors][errors]") {
  auto dir = testing::temp_dir("st");
  auto path = write_sample(dir);
  const std::string bytes = read_file(path);

  SECTION("truncated data section") {
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 4);
    CHECK_THROWS_WITH(models::open_safetensors(path),
                      Contains(path) && Contains("tensor 'ids'") && Contains("truncated"));
  }
  SECTION("header length beyond the file") {
    patch_header_length(path, 1u << 30);
    CHECK_THROWS_WITH(models::open_safetensors(path), Contains(path) && Contains("header length"));
  }
  SECTION("header length pointing into the middle of the JSON") {
    patch_header_length(path, 10);
    CHECK_THROWS_WITH(models::open_safetensors(path), Contains(path) && Contains("invalid JSON"));
  }
  SECTION("file shorter than the length prefix") {
    std::ofstream(path, std::ios::binary) << "abc";
    CHECK_THROWS_WITH(models::open_safetensors(path), Contains("too short"));
  }
  SECTION("missing file") {
    CHECK_THROWS_WITH(models::open_safetensors((dir / "nope.safetensors").string()),
                      Contains("nope.safetensors") && Contains("cannot open"));
  }
}

TEST_CASE("a sharded checkpoint must match its index", "[models][safetensors][errors]") {
  auto dir = testing::temp_dir("shard");
  models::write_safetensors((dir / "s1.safetensors").string(), {{"x", torch::ones({2})}});
  models::write_safetensors((dir / "s2.safetensors").string(), {{"y", torch::ones({3})}});
  auto write_index = [&](nlohmann::json map) {
    std::ofstream(dir / "model.safetensors.index.json")
        << nlohmann::json{{"weight_map", map}}.dump();
  };
  write_index({{"x", "s1.safetensors"}, {"y", "s2.safetensors"}});
  auto ckpt = models::open_safetensors(dir.string());
  CHECK(ckpt.get("y").numel() == 3);

  write_index({{"x", "s1.safetensors"}, {"y", "s2.safetensors"}, {"z", "s2.safetensors"}});
  CHECK_THROWS_WITH(models::open_safetensors(dir.string()),
                    Contains("tensor 'z'") && Contains("missing from the shard"));

  write_index({{"x", "s1.safetensors"}, {"y", "s1.safetensors"}});
  CHECK_THROWS_WITH(models::open_safetensors(dir.string()), Contains("tensor 'y'"));
}

TEST_CASE("loading weights rejects missing, extra and mis-shaped tensors",
          "[models][safetensors][errors]") {
  const auto fixture = testing::source_path("tests/fixtures/models/llama_tied");
  auto config = models::read_model_config(fixture + "/config.json");
  auto original = models::open_safetensors(fixture);
  auto dir = testing::temp_dir("load");
  auto rewrite = [&](auto edit) {
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& name : original.names()) tensors.emplace_back(name, original.get(name));
    edit(tensors);
    models::write_safetensors((dir / "model.safetensors").string(), tensors);
    return models::open_safetensors(dir.string());
  };
  models::LlamaForCausalLM model(config);

  auto missing = rewrite([](auto& t) { t.erase(t.begin()); });
  CHECK_THROWS_WITH(models::load_weights(model, missing), Contains("missing from the checkpoint"));

  auto extra = rewrite([](auto& t) { t.emplace_back("lm_head.weight", torch::zeros({4, 4})); });
  CHECK_THROWS_WITH(models::load_weights(model, extra), Contains("model.safetensors") &&
                                                            Contains("tensor 'lm_head.weight'") &&
                                                            Contains("ties"));

  auto misshaped = rewrite([](auto& t) {
    for (auto& [name, tensor] : t)
      if (name == "model.norm.weight") tensor = torch::ones({tensor.size(0) + 1});
  });
  CHECK_THROWS_WITH(models::load_weights(model, misshaped),
                    Contains("tensor 'model.norm.weight'") && Contains("does not match"));
}

TEST_CASE("an HF directory whose config contradicts its tensors, or with NaN weights, is refused",
          "[models][safetensors][errors]") {
  const auto fixture = testing::source_path("tests/fixtures/models/llama_tied");
  const auto original = models::open_safetensors(fixture);
  auto directory = [&](const std::string& tag, auto edit_config, auto edit_tensors) {
    const auto dir = testing::temp_dir(tag);
    auto config = nlohmann::json::parse(read_file(fixture + "/config.json"));
    edit_config(config);
    write_file_atomically((dir / "config.json").string(), config.dump());
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& name : original.names())
      tensors.emplace_back(name, original.get(name).clone());
    edit_tensors(tensors);
    models::write_safetensors((dir / "model.safetensors").string(), tensors);
    return dir.string();
  };
  auto keep = [](auto&) {};
  // A layer count far beyond the tensors: refused before anything is allocated (it once ran
  // until it was killed).
  const auto layers = directory(
      "hf_layers", [](auto& c) { c["num_hidden_layers"] = 100000000; }, keep);
  CHECK_THROWS_WITH(models::load_model(layers),
                    Contains(layers) && Contains("100000000 layers") && Contains("too few"));
  const auto width = directory(
      "hf_width", [](auto& c) { c["intermediate_size"] = 64; }, keep);
  CHECK_THROWS_WITH(models::load_model(width), Contains("tensor 'model.layers.0.mlp.") &&
                                                   Contains("does not match the config"));
  const auto nan = directory(
      "hf_nan", [](auto&) {},
      [](auto& tensors) {
        for (auto& [name, t] : tensors)
          if (name == "model.layers.1.mlp.up_proj.weight") {
            t[0][0] = std::nan("");
            t[1][2] = INFINITY;
          }
      });
  for (bool nf4 : {false, true}) {
    models::LoadOptions options;
    options.nf4 = nf4;
    CHECK_THROWS_WITH(models::load_model(nan, options),
                      Contains("tensor 'model.layers.1.mlp.up_proj.weight'") &&
                          Contains("2 of its") && Contains("NaN or infinite"));
  }
  // model.non_finite_weights: warn loads them as they are (a warning line on stderr).
  models::LoadOptions warn;
  warn.non_finite = models::NonFiniteWeights::warn;
  auto loaded = models::load_model(nan, warn);
  CHECK(loaded->named_parameters()["model.layers.1.mlp.up_proj.weight"]
            .isfinite()
            .logical_not()
            .sum()
            .item<int64_t>() == 2);
}

TEST_CASE("save_model writes an HF directory that loads back identically",
          "[models][safetensors]") {
  auto model = models::load_model(testing::fixture_path("models/stories260K"));
  auto dir = testing::temp_dir("save");
  models::save_model(model, dir.string());
  auto again = models::load_model(dir.string());
  auto ids = torch::tensor({{1, 100, 200, 300}}, torch::kInt64);
  CHECK(torch::equal(model->forward(ids), again->forward(ids)));
}

TEST_CASE("safetensors tensors must tile the data section: no overlap, gap or size overflow",
          "[models][safetensors][errors]") {
  const auto dir = testing::temp_dir("st_layout");
  const std::string a = R"("a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})";
  CHECK_NOTHROW(models::open_safetensors(write_raw(dir, "{" + a + "}", 8)));
  auto overlap = write_raw(
      dir, "{" + a + R"(, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8);
  CHECK_THROWS_WITH(models::open_safetensors(overlap),
                    Contains(overlap) && Contains("tensor 'b'") && Contains("overlap"));
  auto gap = write_raw(
      dir, "{" + a + R"(, "b": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}})", 16);
  CHECK_THROWS_WITH(models::open_safetensors(gap), Contains("tensor 'b'") && Contains("gap"));
  auto trailing = write_raw(dir, "{" + a + "}", 12);
  CHECK_THROWS_WITH(models::open_safetensors(trailing), Contains("4 bytes after the last tensor"));
  auto overflow = write_raw(
      dir, R"({"a": {"dtype": "F32", "shape": [4611686018427387904, 8], "data_offsets": [0, 0]}})",
      0);
  CHECK_THROWS_WITH(models::open_safetensors(overflow),
                    Contains("tensor 'a'") && Contains("overflows"));
}

TEST_CASE("a checkpoint written one tensor at a time is the file written at once",
          "[models][safetensors]") {
  const auto dir = testing::temp_dir("st_streamed");
  const std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"w", torch::arange(12, torch::kFloat32).view({3, 4})},
      {"h", torch::ones({5}, torch::kBFloat16)},
      {"ids", torch::arange(3, torch::kInt64)}};
  std::vector<models::SafetensorsSpec> specs;
  for (const auto& [name, t] : tensors) specs.push_back({name, t.scalar_type(), t.sizes().vec()});
  const auto path = (dir / "streamed.safetensors").string();
  std::vector<size_t> made;
  models::write_safetensors_streamed(path, specs,
                                     [&](size_t i) {
                                       made.push_back(i);
                                       return tensors[i].second;
                                     },
                                     {{"format", "pt"}});
  CHECK(made == std::vector<size_t>{0, 1, 2});  // in order, each once
  CHECK(read_file(path) == models::serialize_safetensors(tensors, {{"format", "pt"}}));

  // A tensor unlike its header entry stops the write, and nothing is left behind.
  const auto bad = (dir / "bad.safetensors").string();
  CHECK_THROWS_WITH(models::write_safetensors_streamed(
                        bad, specs,
                        [&](size_t i) {
                          return i == 1 ? torch::ones({4}, torch::kBFloat16) : tensors[i].second;
                        }),
                    Contains("tensor 'h'") && Contains("not the dtype and shape its header says"));
  CHECK_FALSE(fs::exists(bad));
  for (const auto& entry : fs::directory_iterator(dir))
    CHECK(entry.path().filename().string().find(".tmp.") == std::string::npos);
}
