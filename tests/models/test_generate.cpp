#include <algorithm>
#include <catch2/catch.hpp>

#include "common/error.h"
#include "models/checkpoint_io.h"
#include "models/generate.h"
#include "models/tokenizer.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {
struct Stories {
  models::LlamaForCausalLM model = models::load_model(testing::fixture_path("models/stories260K"));
  models::Tokenizer tokenizer{testing::fixture_path("models/stories260K/tokenizer.model")};
  std::vector<int64_t> prompt = tokenizer.encode("Once upon a time", true);
  models::TokenDecoder decode = [this](const std::vector<int64_t>& t) {
    return tokenizer.decode(t);
  };
};
}  // namespace

TEST_CASE("seeded sampling is reproducible and differs across seeds", "[models][generate]") {
  Stories s;
  models::SamplingOptions o;
  o.greedy = false;
  o.temperature = 1.0;
  o.top_p = 0.95;
  o.max_new_tokens = 24;
  o.seed = 7;
  auto a = models::generate(s.model, {s.prompt, s.prompt}, o);
  auto b = models::generate(s.model, {s.prompt, s.prompt}, o);
  CHECK(a[0].tokens == b[0].tokens);
  CHECK(a[1].tokens == b[1].tokens);
  CHECK(a[0].tokens != a[1].tokens);  // rows draw from their own generators
  o.seed = 8;
  CHECK(models::generate(s.model, {s.prompt}, o)[0].tokens != a[0].tokens);
}

TEST_CASE("a tiny top-p keeps only the most likely token, which is greedy decoding",
          "[models][generate]") {
  Stories s;
  models::SamplingOptions greedy;
  greedy.max_new_tokens = 20;
  models::SamplingOptions nucleus = greedy;
  nucleus.greedy = false;
  nucleus.top_p = 1e-6;
  nucleus.seed = 3;
  CHECK(models::generate(s.model, {s.prompt}, nucleus)[0].tokens ==
        models::generate(s.model, {s.prompt}, greedy)[0].tokens);
}

TEST_CASE("generation stops at EOS, at a stop string, or at max_new_tokens", "[models][generate]") {
  Stories s;
  models::SamplingOptions o;
  o.max_new_tokens = 300;
  // stories260K rarely ends a story within 300 greedy tokens, so an EOS id is picked from its
  // own greedy output: generation must stop at that token's first occurrence and keep it.
  auto free_run = models::generate(s.model, {s.prompt}, o, s.decode)[0];
  REQUIRE(free_run.tokens.size() > 40);
  const int64_t eos_id = free_run.tokens[30];
  const auto first = std::find(free_run.tokens.begin(), free_run.tokens.end(), eos_id);
  o.eos_ids = {eos_id};
  auto eos = models::generate(s.model, {s.prompt}, o, s.decode)[0];
  REQUIRE(eos.finish_reason == "eos");
  CHECK(eos.tokens.back() == eos_id);
  CHECK(eos.tokens == std::vector<int64_t>(free_run.tokens.begin(), first + 1));
  CHECK(free_run.text.find("Lily") != std::string::npos);

  o.stop_strings = {"Lily"};
  auto stopped = models::generate(s.model, {s.prompt}, o, s.decode)[0];
  CHECK(stopped.finish_reason == "stop");
  CHECK(stopped.text.find("Lily") == std::string::npos);
  CHECK(stopped.tokens.size() < free_run.tokens.size());

  o.stop_strings.clear();
  o.max_new_tokens = 5;
  auto length = models::generate(s.model, {s.prompt}, o)[0];
  CHECK(length.finish_reason == "length");
  CHECK(length.tokens.size() == 5);
}

TEST_CASE("generate rejects impossible requests", "[models][generate][errors]") {
  Stories s;
  models::SamplingOptions o;
  o.max_new_tokens = 600;
  CHECK_THROWS_WITH(models::generate(s.model, {s.prompt}, o),
                    Contains("exceeds the model's 512 positions"));
  o.max_new_tokens = 4;
  CHECK_THROWS_WITH(models::generate(s.model, {{}}, o), Contains("empty prompt"));
  o.stop_strings = {"x"};
  CHECK_THROWS_WITH(models::generate(s.model, {s.prompt}, o), Contains("need a decoder"));
}
