// The model families people fine-tune today against HF transformers: tiny random checkpoints
// written by scripts/make_family_fixtures.py (Llama 3.1's RoPE scaling and the linear, dynamic
// and yarn ones, Qwen2's q/k/v biases, Qwen3's q/k norms and wide heads). Each loads from its HF
// directory and must give transformers' logits within 1e-4 at every position of three prompts
// (one past the scaled fixtures' original context) and the same 32 greedy tokens through the
// KV cache.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/checkpoint_io.h"
#include "models/generate.h"
#include "models/gguf_import.h"
#include "models/hf_config.h"
#include "models/lora.h"
#include "models/peft_adapter.h"
#include "models/rope.h"
#include "tests/models/byte_level_tokens.h"
#include "tests/models/family_gguf.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {

const std::vector<std::string>& family_fixtures() {
  static const std::vector<std::string> names = {"llama3_rope", "llama_linear", "llama_dynamic",
                                                 "llama_yarn",  "qwen2",        "qwen3"};
  return names;
}

std::string fixture_dir(const std::string& name) {
  return testing::source_path("tests/fixtures/families/" + name);
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().max().item<double>();
}

std::vector<int64_t> as_ids(const torch::Tensor& t) {
  auto c = t.to(torch::kInt64).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

}  // namespace

TEST_CASE("families: every prompt's logits equal transformers' within 1e-4",
          "[models][families][hf]") {
  for (const auto& name : family_fixtures()) {
    INFO(name);
    auto model = models::load_model(fixture_dir(name));
    auto expected = models::open_safetensors(fixture_dir(name) + "/expected.safetensors");
    for (int i = 0; i < 3; ++i) {
      const auto ids = expected.get("input_ids_" + std::to_string(i));
      const auto want = expected.get("logits_" + std::to_string(i));
      auto logits = model->forward(ids.unsqueeze(0))[0];
      INFO("prompt " << i << " of " << ids.size(0) << " tokens");
      REQUIRE(logits.sizes() == want.sizes());
      CHECK(max_abs_diff(logits, want) < 1e-4);
    }
  }
}

TEST_CASE("families: 32 greedy tokens through the KV cache equal transformers' generate",
          "[models][families][hf]") {
  for (const auto& name : family_fixtures()) {
    INFO(name);
    auto model = models::load_model(fixture_dir(name));
    auto expected = models::open_safetensors(fixture_dir(name) + "/expected.safetensors");
    models::SamplingOptions options;
    options.greedy = true;
    options.max_new_tokens = 32;
    options.eos_ids = {-1};  // transformers' reference ran without an end token
    const auto out = models::generate(model, {as_ids(expected.get("greedy_prompt"))}, options);
    CHECK(out[0].tokens == as_ids(expected.get("greedy_tokens")));
  }
}

TEST_CASE("families: what each family adds is read from config.json", "[models][families]") {
  const auto llama3 = models::read_model_config(fixture_dir("llama3_rope") + "/config.json");
  CHECK(llama3.rope_scaling.type == "llama3");
  CHECK(llama3.rope_scaling.factor == 8.0);
  CHECK(llama3.rope_scaling.original_max_positions == 16);
  CHECK(llama3.rope_theta == 500000.0);
  // transformers 4's layout: rope_theta at the top, rope_scaling with the old "type" key.
  const auto linear = models::read_model_config(fixture_dir("llama_linear") + "/config.json");
  CHECK(linear.rope_scaling.type == "linear");
  CHECK(linear.rope_scaling.factor == 4.0);
  const auto qwen2 = models::read_model_config(fixture_dir("qwen2") + "/config.json");
  CHECK(qwen2.architecture == "Qwen2ForCausalLM");
  CHECK(qwen2.qkv_bias);
  CHECK_FALSE(qwen2.o_bias);
  CHECK_FALSE(qwen2.sliding_window);  // named, but off (use_sliding_window: false)
  CHECK(qwen2.tie_word_embeddings);
  const auto qwen3 = models::read_model_config(fixture_dir("qwen3") + "/config.json");
  CHECK(qwen3.qk_norm);
  CHECK(qwen3.head_dim == 16);
  CHECK(qwen3.hidden_size / qwen3.num_heads == 8);
}

TEST_CASE("families: settings that would change the numerics unread are one-line errors",
          "[models][families][errors]") {
  auto config = [](const std::string& extra) {
    return nlohmann::json::parse(
        R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10)" +
        extra + "}");
  };
  CHECK_THROWS_WITH(
      models::parse_model_config(
          config(R"(, "rope_scaling": {"rope_type": "longrope", "factor": 2})"), "c.json"),
      Contains("c.json") && Contains("rope_type") && Contains("longrope") && Contains("yarn"));
  CHECK_THROWS_WITH(
      models::parse_model_config(
          config(R"(, "rope_parameters": {"rope_type": "yarn", "factor": 4, "ramp": 2})"),
          "c.json"),
      Contains("ramp") && Contains("unknown RoPE setting"));
  CHECK_THROWS_WITH(
      models::parse_model_config(config(R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8,
                                   "low_freq_factor": 4, "high_freq_factor": 1})"),
                                 "c.json"),
      Contains("high_freq_factor") && Contains("above low_freq_factor"));
  CHECK_THROWS_WITH(models::parse_model_config(config(R"(, "mlp_bias": true)"), "c.json"),
                    Contains("mlp_bias"));
  auto qwen = nlohmann::json::parse(
      R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 32, "intermediate_size": 64,
          "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10,
          "use_sliding_window": true, "sliding_window": 8})");
  CHECK_THROWS_WITH(models::parse_model_config(qwen, "q.json"),
                    Contains("q.json") && Contains("use_sliding_window"));
  auto phi = config("");
  phi["architectures"] = {"Phi3ForCausalLM"};
  CHECK_THROWS_WITH(models::parse_model_config(phi, "p.json"),
                    Contains("Phi3ForCausalLM") && Contains("Qwen3ForCausalLM"));
}

TEST_CASE("families: Qwen2's biases stay frozen and dense under NF4 and LoRA",
          "[models][families][lora]") {
  models::LoadOptions options;
  options.nf4 = true;
  auto model = models::load_model(fixture_dir("qwen2"), options);
  auto dense = models::load_model(fixture_dir("qwen2"));
  auto& q = *model->model->layers[0]->as<models::DecoderLayerImpl>()->self_attn->q_proj;
  REQUIRE(q.is_nf4());
  REQUIRE(q.bias.defined());
  const auto& dense_q = *dense->model->layers[0]->as<models::DecoderLayerImpl>()->self_attn->q_proj;
  CHECK(torch::equal(q.bias, dense_q.bias));
  models::LoraConfig lora;
  lora.spec.r = 4;
  lora.target_modules = {"q_proj", "k_proj", "v_proj", "o_proj"};
  models::attach_lora(model, lora);
  CHECK_FALSE(q.bias.requires_grad());
  CHECK(q.lora_A.requires_grad());
  // With B still zero the adapted NF4 model is the NF4 base: its logits stay close to the
  // dense model's (NF4 error only).
  auto expected = models::open_safetensors(fixture_dir("qwen2") + "/expected.safetensors");
  const auto ids = expected.get("input_ids_1").unsqueeze(0);
  CHECK(max_abs_diff(model->forward(ids), dense->forward(ids)) < 0.5);
}

TEST_CASE("families: a trained adapter survives peft export and a merged export, biases kept",
          "[models][families][lora]") {
  for (const std::string name : {"qwen2", "qwen3", "llama3_rope"}) {
    INFO(name);
    auto model = models::load_model(fixture_dir(name));
    models::LoraConfig lora;
    lora.spec.r = 4;
    models::attach_lora(model, lora);
    {
      torch::NoGradGuard no_grad;
      torch::manual_seed(5);
      for (auto& [param_name, param] : models::lora_parameters(model))
        param.copy_(torch::randn_like(param) * 0.1);  // B no longer zero: the adapter matters
    }
    auto expected = models::open_safetensors(fixture_dir(name) + "/expected.safetensors");
    const auto ids = expected.get("input_ids_2").unsqueeze(0);
    const auto adapted = model->forward(ids);
    const std::string dir = testing::temp_dir("families_export_" + name).string();
    models::save_peft_adapter(model, lora, fixture_dir(name), dir + "/adapter");
    auto reloaded = models::load_model(fixture_dir(name));
    models::load_peft_adapter(reloaded, dir + "/adapter");
    CHECK(max_abs_diff(reloaded->forward(ids), adapted) < 1e-5);
    models::merge_adapters(reloaded);
    models::save_model(reloaded, dir + "/merged");
    auto merged = models::load_model(dir + "/merged");
    CHECK(merged->config.qkv_bias == model->config.qkv_bias);
    CHECK(merged->config.qk_norm == model->config.qk_norm);
    CHECK(merged->config.rope_scaling.type == model->config.rope_scaling.type);
    CHECK(max_abs_diff(merged->forward(ids), adapted) < 1e-4);
  }
}

TEST_CASE("families: dynamic RoPE grows theta past max_position_embeddings only",
          "[models][families]") {
  // transformers' dynamic NTK reads max_position_embeddings and ignores an
  // original_max_position_embeddings the config also names.
  auto c = models::read_model_config(fixture_dir("llama_dynamic") + "/config.json");
  const auto plain = models::rope_frequencies(c, 15, torch::kCPU).first;
  const auto grown = models::rope_frequencies(c, 39, torch::kCPU).first;
  c.rope_scaling.original_max_positions = 8;
  CHECK(torch::equal(models::rope_frequencies(c, 15, torch::kCPU).first, plain));
  CHECK(torch::equal(models::rope_frequencies(c, 39, torch::kCPU).first, grown));
  // Within the context nothing changes; past it theta = base (f L / C - (f - 1))^(d / (d - 2)).
  models::ModelConfig unscaled = c;
  unscaled.rope_scaling = {};
  CHECK(torch::equal(plain, models::rope_frequencies(unscaled, 15, torch::kCPU).first));
  const double d = double(c.head_dim), f = c.rope_scaling.factor;
  unscaled.rope_theta =
      c.rope_theta * std::pow(f * 40.0 / double(c.max_positions) - (f - 1.0), d / (d - 2.0));
  CHECK(torch::allclose(grown, models::rope_frequencies(unscaled, 0, torch::kCPU).first));
}

TEST_CASE(
    "families: Llama 3.1, Qwen2 and Qwen3 GGUF files import to transformers' logits within 1e-4",
    "[models][families][gguf]") {
  for (const auto& [name, arch] : std::vector<std::pair<std::string, std::string>>{
           {"llama3_rope", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"}}) {
    INFO(name);
    // Written by PyPI gguf (scripts/make_family_fixtures.py), and by this repository's own
    // builder (tests/models/family_gguf.h, which the run tests use): both must import alike.
    const std::string written = fixture_dir(name) + "/" + name + ".gguf";
    for (const auto& gguf : {written, testing::family_gguf(fixture_dir(name), name, arch)}) {
      INFO(gguf);
      const auto dir = (testing::temp_dir("family_import_" + name) / "model").string();
      models::import_gguf(gguf, dir, nullptr, models::NonFiniteWeights::error,
                          models::ImportDtype::float32);
      auto model = models::load_model(dir);
      const auto hf = models::read_model_config(fixture_dir(name) + "/config.json");
      CHECK(model->config.architecture == hf.architecture);
      // Llama 3.1's scaling comes back from rope_freqs: factor 8, low/high 1 and 4, context 16.
      CHECK(model->config.rope_scaling.type == hf.rope_scaling.type);
      CHECK(model->config.rope_scaling.factor == Approx(hf.rope_scaling.factor).epsilon(1e-6));
      CHECK(model->config.rope_scaling.low_freq_factor == hf.rope_scaling.low_freq_factor);
      CHECK(model->config.rope_scaling.high_freq_factor ==
            Approx(hf.rope_scaling.high_freq_factor).epsilon(1e-4));
      CHECK(model->config.rope_scaling.original_max_positions ==
            hf.rope_scaling.original_max_positions);
      auto expected = models::open_safetensors(fixture_dir(name) + "/expected.safetensors");
      for (int i = 0; i < 3; ++i) {
        const auto ids = expected.get("input_ids_" + std::to_string(i));
        auto logits = model->forward(ids.unsqueeze(0))[0];
        INFO("prompt " << i);
        const auto want = expected.get("logits_" + std::to_string(i));
        CHECK(max_abs_diff(logits.slice(-1, 0, want.size(-1)), want) < 1e-4);
      }
      // 32 greedy tokens through the KV cache. The byte vocabulary's extra rows are zero, so their
      // logits are 0: below every step's winner here, so the same tokens are picked.
      models::SamplingOptions options;
      options.greedy = true;
      options.max_new_tokens = 32;
      options.eos_ids = {-1};
      const auto out = models::generate(model, {as_ids(expected.get("greedy_prompt"))}, options);
      CHECK(out[0].tokens == as_ids(expected.get("greedy_tokens")));
    }
  }
}

TEST_CASE("families: rope_freqs that no Llama 3 scaling gives are a one-line error",
          "[models][families][gguf]") {
  auto config = models::read_model_config(fixture_dir("llama3_rope") + "/config.json");
  const auto where = std::string("x.gguf: tensor 'rope_freqs.weight'");
  auto factors = torch::tensor(testing::converter_rope_freqs(config));
  CHECK(models::llama3_scaling_from_factors(config, factors, where).type == "llama3");
  CHECK(models::llama3_scaling_from_factors(config, torch::ones({8}), where).type == "default");
  // Llama 3.1 8B's and 3.2's own shapes (head_dim 128, theta 5e5, context 8192; factor 8 and
  // 32): many blended frequencies, from which the context and high factor are read.
  for (double factor : {8.0, 32.0}) {
    auto real = config;
    real.head_dim = 128;
    real.rope_theta = 500000.0;
    real.rope_scaling.factor = factor;
    real.rope_scaling.original_max_positions = 8192;
    const auto s = models::llama3_scaling_from_factors(
        real, torch::tensor(testing::converter_rope_freqs(real)), where);
    CHECK(s.factor == Approx(factor));
    CHECK(s.original_max_positions == 8192);
    CHECK(s.high_freq_factor == Approx(4.0).epsilon(1e-4));
  }
  auto bent = factors.clone();
  bent[bent.size(0) - 1] = 3.0f;  // the lowest frequency no longer at the factor
  CHECK_THROWS_WITH(models::llama3_scaling_from_factors(config, bent, where),
                    Catch::StartsWith(where) && Catch::Contains("does not give"));
  CHECK_THROWS_WITH(models::llama3_scaling_from_factors(config, torch::ones({5}), where),
                    Catch::Contains("expected 8 frequency factors"));
  CHECK_THROWS_WITH(models::llama3_scaling_from_factors(config, -factors, where),
                    Catch::Contains("finite and positive"));
}
