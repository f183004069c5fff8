// JSON numbers that an integer field cannot hold. nlohmann casts a float to the integer type
// without a check, which is undefined behaviour when it does not fit; the adapter-config fuzzer
// found "r": 3.3e31 (experiments/fuzz.md). Each reader of strangers' JSON refuses such a value
// with a line naming the field.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_fits.h"
#include "models/hf_config.h"
#include "models/peft_adapter_config.h"
#include "models/safetensors_header.h"

using namespace citeforge;
using Catch::Matchers::Contains;
using nlohmann::json;

TEST_CASE("json_fits accepts the integers a type holds and nothing else", "[common][json]") {
  CHECK(json_fits<int64_t>(json(5)));
  CHECK(json_fits<int64_t>(json(-5)));
  CHECK_FALSE(json_fits<int64_t>(json(3.3e31)));
  CHECK_FALSE(json_fits<int64_t>(json(2.0)));  // a float, even a whole one
  CHECK_FALSE(json_fits<int64_t>(json(std::numeric_limits<uint64_t>::max())));
  CHECK(json_fits<uint64_t>(json(std::numeric_limits<uint64_t>::max())));
  CHECK_FALSE(json_fits<size_t>(json(-1)));
  CHECK_FALSE(json_fits<int32_t>(json(int64_t{1} << 40)));
  CHECK(json_fits<std::vector<int64_t>>(json::array({1, 2})));
  CHECK_FALSE(json_fits<std::vector<int64_t>>(json::array({1, 1e30})));
  CHECK(json_fits<double>(json(1e300)));
}

TEST_CASE("an integer field given a number it cannot hold is one line naming it",
          "[common][json][errors]") {
  // The fuzzer's input, reduced.
  CHECK_THROWS_WITH(
      models::parse_peft_adapter_config(R"({"peft_type": "LORA", "r": 3.3e31})", "a.json"),
      Contains("a.json") && Contains("field 'r'") && Contains("expected an integer"));
  json config = {{"architectures", {"LlamaForCausalLM"}},
                 {"hidden_size", 8},
                 {"intermediate_size", 16},
                 {"num_hidden_layers", 1e30},
                 {"num_attention_heads", 2},
                 {"vocab_size", 32},
                 {"max_position_embeddings", 64}};
  CHECK_THROWS_WITH(models::parse_model_config(config, "config.json"),
                    Contains("field 'num_hidden_layers'") && Contains("expected an integer"));
  config["num_hidden_layers"] = 1;
  config["eos_token_id"] = json::array({2, 1e30});
  CHECK_THROWS_WITH(models::parse_model_config(config, "config.json"),
                    Contains("field 'eos_token_id'"));
  const std::string header = R"({"w": {"dtype": "F32", "shape": [1e30], "data_offsets": [0, 4]}})";
  const uint64_t len = header.size();
  const std::string file =
      std::string(reinterpret_cast<const char*>(&len), 8) + header + std::string(4, '\0');
  CHECK_THROWS_WITH(models::parse_safetensors_header(file, "m.safetensors"),
                    Contains("tensor 'w'") && Contains("integers that fit"));
}
