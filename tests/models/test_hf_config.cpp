#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/hf_config.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {
json minimal() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"hidden_size", 32},
          {"intermediate_size", 64},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"vocab_size", 100}};
}
}  // namespace

TEST_CASE("stories260K config.json reads every field the decoder needs", "[models][config]") {
  auto c = models::read_model_config(testing::fixture_path("models/stories260K/config.json"));
  CHECK(c.architecture == "LlamaForCausalLM");
  CHECK(c.hidden_size == 64);
  CHECK(c.intermediate_size == 172);
  CHECK(c.num_layers == 5);
  CHECK(c.num_heads == 8);
  CHECK(c.num_kv_heads == 4);
  CHECK(c.head_dim == 8);
  CHECK(c.vocab_size == 512);
  CHECK(c.max_positions == 512);
  CHECK(c.rms_norm_eps == Approx(1e-5));
  CHECK(c.rope_theta == 10000.0);
  CHECK(c.tie_word_embeddings);
  CHECK_FALSE(c.sliding_window);
  CHECK(c.bos_token_id == 1);
  CHECK(c.eos_token_ids == std::vector<int64_t>{2});
}

TEST_CASE("config defaults follow HF: kv heads = heads, head_dim = hidden / heads",
          "[models][config]") {
  auto c = models::parse_model_config(minimal(), "config.json");
  CHECK(c.num_kv_heads == 4);
  CHECK(c.head_dim == 8);
  CHECK_FALSE(c.tie_word_embeddings);
}

TEST_CASE("Mistral sliding window, nested rope_parameters and eos lists are read",
          "[models][config]") {
  json j = minimal();
  j["architectures"] = {"MistralForCausalLM"};
  j["sliding_window"] = 4096;
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  j["eos_token_id"] = {2, 32000};
  auto c = models::parse_model_config(j, "config.json");
  CHECK(c.sliding_window == 4096);
  CHECK(c.rope_theta == 1e6);
  CHECK(c.eos_token_ids == std::vector<int64_t>{2, 32000});
}

TEST_CASE("config errors name the file and the field", "[models][config][errors]") {
  json j = minimal();
  j["architectures"] = {"GPT2LMHeadModel"};
  CHECK_THROWS_WITH(
      models::parse_model_config(j, "m/config.json"),
      Contains("m/config.json") && Contains("unsupported architecture 'GPT2LMHeadModel'"));

  j = minimal();
  j.erase("hidden_size");
  CHECK_THROWS_WITH(models::parse_model_config(j, "c.json"),
                    Contains("field 'hidden_size'") && Contains("missing"));

  j = minimal();
  j["num_hidden_layers"] = "two";
  CHECK_THROWS_WITH(models::parse_model_config(j, "c.json"), Contains("field 'num_hidden_layers'"));

  j = minimal();
  j["rope_scaling"] = {{"rope_type", "longrope"}, {"factor", 8.0}};
  CHECK_THROWS_WITH(models::parse_model_config(j, "c.json"),
                    Contains("unsupported RoPE type 'longrope'"));
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  CHECK_THROWS_WITH(models::parse_model_config(j, "c.json"),
                    Contains("field 'rope_scaling' key 'low_freq_factor'") && Contains("missing"));

  j = minimal();
  j["num_key_value_heads"] = 3;
  CHECK_THROWS_WITH(models::parse_model_config(j, "c.json"), Contains("num_key_value_heads"));

  CHECK_THROWS_WITH(models::read_model_config("/nonexistent/config.json"),
                    Contains("/nonexistent/config.json"));
}

TEST_CASE("a config written by citeforge reads back the same", "[models][config]") {
  json j = minimal();
  j["sliding_window"] = 8;
  j["head_dim"] = 16;
  auto c = models::parse_model_config(j, "a");
  auto back = models::parse_model_config(models::model_config_to_json(c), "b");
  CHECK(back.head_dim == 16);
  CHECK(back.sliding_window == 8);
  CHECK(back.hidden_size == c.hidden_size);
  CHECK(back.eos_token_ids == c.eos_token_ids);
}
