// peft's adapter format both ways: an adapter trained by Python peft loads and gives peft's
// logits; citeforge's own adapters save with peft's names and fields and load back; merging
// folds an adapter into the base.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "models/checkpoint_io.h"
#include "models/peft_adapter.h"
#include "models/safetensors.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kBase = "tests/fixtures/models/llama_tied";
const std::string kAdapter = "tests/fixtures/lora/llama_tied_adapter";

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}
}  // namespace

TEST_CASE("an adapter saved by peft loads and reproduces peft's logits", "[models][lora][peft]") {
  auto model = models::load_model(testing::source_path(kBase));
  auto adapter = models::load_peft_adapter(model, testing::source_path(kAdapter));
  CHECK(adapter.config.spec.r == 4);
  CHECK(adapter.adapted.size() == 7 * size_t(model->config.num_layers));
  auto expected =
      models::open_safetensors(testing::source_path("tests/fixtures/lora/expected.safetensors"));
  auto ids = expected.get("input_ids");
  CHECK(max_abs_diff(model->forward(ids), expected.get("logits")) < 1e-4);
  models::AdaptersDisabled off(model);
  CHECK(max_abs_diff(model->forward(ids), expected.get("base_logits")) < 1e-4);
}

TEST_CASE("citeforge adapters save in peft's format and load back", "[models][lora][peft]") {
  auto model = models::load_model(testing::source_path(kBase));
  models::LoraConfig config;
  config.spec = {4, 8, 0.05};
  models::attach_lora(model, config);
  torch::manual_seed(2);
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : models::lora_parameters(model)) t.normal_(0, 0.1);
  }
  auto dir = testing::temp_dir("peft-save") / "adapter";
  models::save_peft_adapter(model, config, "/models/base", dir.string());
  // peft's names and fields, compared with the adapter peft itself wrote.
  auto ours = models::open_safetensors((dir / "adapter_model.safetensors").string()).names();
  auto peft =
      models::open_safetensors(testing::source_path(kAdapter + "/adapter_model.safetensors"))
          .names();
  CHECK(ours == peft);
  auto json = nlohmann::json::parse(read_file((dir / "adapter_config.json").string()));
  auto peft_json =
      nlohmann::json::parse(read_file(testing::source_path(kAdapter + "/adapter_config.json")));
  for (const char* key : {"peft_type", "task_type", "bias", "r", "target_modules", "use_dora"})
    CHECK(json[key] == peft_json[key]);
  CHECK(json["lora_alpha"] == 8.0);
  CHECK(json["base_model_name_or_path"] == "/models/base");

  auto ids = torch::randint(0, model->config.vocab_size, {1, 6});
  auto reloaded = models::load_model(testing::source_path(kBase));
  models::load_peft_adapter(reloaded, dir.string());
  model->eval();
  reloaded->eval();
  CHECK(torch::equal(model->forward(ids), reloaded->forward(ids)));

  // Merging gives a dense model with the adapter's output and no adapter parameters.
  models::merge_adapters(reloaded);
  CHECK(models::lora_parameters(reloaded).empty());
  CHECK(max_abs_diff(reloaded->forward(ids), model->forward(ids)) < 1e-5);
}

TEST_CASE("bad peft adapters are errors naming the file and field",
          "[models][lora][peft][errors]") {
  auto root = testing::temp_dir("peft-bad");
  auto copy = [&](const std::string& name) {
    auto dir = root / name;
    fs::create_directories(dir);
    for (const char* f : {"adapter_model.safetensors", "adapter_config.json"})
      fs::copy_file(testing::source_path(kAdapter + "/" + f), dir / f);
    return dir;
  };
  auto edit_config = [&](const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
    auto j = nlohmann::json::parse(read_file((dir / "adapter_config.json").string()));
    edit(j);
    write_file_atomically((dir / "adapter_config.json").string(), j.dump());
  };
  auto fresh = [&] { return models::load_model(testing::source_path(kBase)); };
  {
    auto dir = copy("dora");
    edit_config(dir, [](nlohmann::json& j) { j["use_dora"] = true; });
    auto m = fresh();
    CHECK_THROWS_WITH(models::load_peft_adapter(m, dir.string()),
                      Contains("adapter_config.json") && Contains("use_dora"));
  }
  {
    auto dir = copy("rank");
    edit_config(dir, [](nlohmann::json& j) { j["r"] = 8; });
    auto m = fresh();
    CHECK_THROWS_WITH(models::load_peft_adapter(m, dir.string()),
                      Contains("adapter_model.safetensors") && Contains("shape"));
  }
  {
    auto dir = copy("targets");
    edit_config(dir, [](nlohmann::json& j) { j["target_modules"] = {"q_proj"}; });
    auto m = fresh();
    CHECK_THROWS_WITH(models::load_peft_adapter(m, dir.string()), Contains("unexpected"));
  }
  {
    auto m = fresh();
    CHECK_THROWS_WITH(models::load_peft_adapter(m, (root / "none").string()),
                      Contains("no adapter_config.json"));
  }
  {
    // An absurd rank is refused by the tensors' shapes before anything is allocated.
    auto dir = copy("huge_rank");
    edit_config(dir, [](nlohmann::json& j) { j["r"] = 1000000000000LL; });
    auto m = fresh();
    CHECK_THROWS_WITH(models::load_peft_adapter(m, dir.string()),
                      Contains("adapter_model.safetensors") && Contains("lora_A") &&
                          Contains("does not match r = 1000000000000"));
    CHECK(models::lora_parameters(m).empty());
  }
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, double>>{{"lora_alpha", -1.0}, {"lora_dropout", 1.5}}) {
    auto dir = copy("bad_" + key);
    edit_config(dir, [&](nlohmann::json& j) { j[key] = value; });
    auto m = fresh();
    CHECK_THROWS_WITH(models::load_peft_adapter(m, dir.string()),
                      Contains("adapter_config.json") && Contains("field '" + key + "'"));
  }
  {
    // NaN adapter weights and integer tensors: one line naming the tensor, nothing attached.
    auto dir = copy("nan");
    auto original = models::open_safetensors((dir / "adapter_model.safetensors").string());
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto& name : original.names())
      tensors.emplace_back(name, original.get(name).clone());
    tensors[0].second.view(-1)[0] = std::nanf("");
    models::write_safetensors((dir / "adapter_model.safetensors").string(), tensors);
    auto m = fresh();
    CHECK_THROWS_WITH(models::load_peft_adapter(m, dir.string()),
                      Contains("tensor '" + tensors[0].first + "'") && Contains("NaN"));
    CHECK(models::lora_parameters(m).empty());
    tensors[0].second = torch::zeros(tensors[0].second.sizes(), torch::kInt64);
    models::write_safetensors((dir / "adapter_model.safetensors").string(), tensors);
    CHECK_THROWS_WITH(models::load_peft_adapter(m, dir.string()),
                      Contains("dtype I64 is not a float"));
  }
}
