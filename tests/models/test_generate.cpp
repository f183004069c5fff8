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

TEST_CASE("the prompts' shared prefix leaves each prompt a token of its own",
          "[models][generate][prefix]") {
  using models::shared_prompt_prefix;
  CHECK(shared_prompt_prefix({}) == 0);
  CHECK(shared_prompt_prefix({{1, 2, 3}}) == 2);
  CHECK(shared_prompt_prefix({{1, 2, 3, 4}, {1, 2, 3, 5, 6}}) == 3);
  CHECK(shared_prompt_prefix({{1, 2, 3}, {1, 2, 3, 4}}) == 2);  // the shorter keeps its last
  CHECK(shared_prompt_prefix({{1, 2, 3}, {1, 2, 3}}) == 2);
  CHECK(shared_prompt_prefix({{1, 2}, {3, 2}}) == 0);
  CHECK(shared_prompt_prefix({{1}, {1, 2}}) == 0);
}

TEST_CASE("after a shared prefix each row's own tokens keep their whole-prompt positions",
          "[models][generate][prefix]") {
  // Two prompts after 3 shared tokens: 2 and 4 own tokens in 4 slots.
  auto inputs = models::after_shared_prefix_inputs({2, 4}, 3, 4, torch::kCPU);
  CHECK(torch::equal(inputs.positions,
                     torch::tensor({0, 0, 3, 4, 3, 4, 5, 6}, torch::kInt64).view({2, 4})));
  auto expected = torch::tensor({1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1}, torch::kBool);
  CHECK(torch::equal(inputs.key_mask, expected.view({2, 7})));
}

TEST_CASE("prefilling the prompts' shared prefix once decodes as the whole prompts do",
          "[models][generate][prefix]") {
  Stories s;
  // Prompts with a long common start and endings of different lengths, so that both the shared
  // slots and the padding after them are exercised.
  std::vector<std::vector<int64_t>> prompts;
  for (const char* text : {"Once upon a time, there was a little girl named Lily. She",
                           "Once upon a time, there was a little girl named Lily. One day she saw",
                           "Once upon a time, there was a little girl named Lily. Her mom"})
    prompts.push_back(s.tokenizer.encode(text, true));
  REQUIRE(models::shared_prompt_prefix(prompts) >= 10);
  for (bool greedy : {true, false}) {
    models::SamplingOptions whole;
    whole.max_new_tokens = 16;
    whole.eos_ids = {-1};
    whole.greedy = greedy;
    whole.temperature = 0.8;
    whole.seed = 11;
    models::SamplingOptions shared = whole;
    shared.share_prompt_prefix = true;
    auto a = models::generate(s.model, prompts, whole);
    auto b = models::generate(s.model, prompts, shared);
    for (size_t i = 0; i < prompts.size(); ++i) {
      INFO((greedy ? "greedy" : "sampled") << ", prompt " << i);
      CHECK(b[i].tokens == a[i].tokens);
      for (size_t t = 0; t < a[i].logprobs.size(); ++t)
        CHECK(b[i].logprobs[t] == Approx(a[i].logprobs[t]).margin(1e-4));
    }
  }
}

TEST_CASE("packed hidden states after a shared prefix are each sequence's own states",
          "[models][generate][prefix]") {
  // PPO's learner scores rollouts so: the shared start once, every sequence's rest packed. Each
  // requested state must be the one the sequence gives run alone, zeros past its end.
  Stories s;
  std::vector<std::vector<int64_t>> sequences;
  for (const char* text : {"Once upon a time, there was a little girl named Lily. She",
                           "Once upon a time, there was a little girl named Lily. One day she saw",
                           "Once upon a time, there was a little girl named Lily. Her"})
    sequences.push_back(s.tokenizer.encode(text, true));
  const int64_t shared = models::shared_prompt_prefix(sequences);
  REQUIRE(shared >= 10);
  const int64_t count = 6;
  std::vector<int64_t> from;
  for (const auto& q : sequences) from.push_back(std::max<int64_t>(shared, int64_t(q.size()) - 4));
  torch::NoGradGuard no_grad;
  const auto states = models::packed_hidden_states(s.model, sequences, shared, from, count);
  REQUIRE(states.sizes() == torch::IntArrayRef({3, count, s.model->config.hidden_size}));
  for (size_t b = 0; b < sequences.size(); ++b) {
    INFO("sequence " << b);
    const int64_t length = int64_t(sequences[b].size());
    const auto alone = s.model->hidden_states(torch::tensor(sequences[b]).unsqueeze(0))[0];
    for (int64_t i = 0; i < count; ++i) {
      const int64_t at = from[b] + i;
      const auto got = states[int64_t(b)][i];
      if (at < length)
        CHECK((got - alone[at]).abs().max().item<double>() < 1e-4);
      else
        CHECK(got.abs().max().item<double>() == 0.0);
    }
  }
  // Nothing shared works too (the rows packed only), and a start inside the shared tokens, past
  // a sequence or with gradients on is refused.
  const auto unshared = models::packed_hidden_states(s.model, sequences, 0, from, count);
  CHECK((unshared - states).abs().max().item<double>() < 1e-4);
  CHECK_THROWS_WITH(models::packed_hidden_states(s.model, sequences, shared, {1, 20, 20}, 2),
                    Contains("sequence 0") && Contains("shared tokens"));
  CHECK_THROWS_WITH(
      models::packed_hidden_states(s.model, sequences, shared, {shared, 200, shared}, 2),
      Contains("sequence 1"));
  {
    torch::AutoGradMode grad(true);
    CHECK_THROWS_WITH(models::packed_hidden_states(s.model, sequences, shared, from, count),
                      Contains("gradients"));
  }
}

TEST_CASE("prompts with nothing in common are packed into one sequence as the padded batch is",
          "[models][generate][prefix]") {
  // On a CPU the option packs the prompts into one sequence, without the padding; with no shared
  // prefix that is all it changes.
  Stories s;
  std::vector<std::vector<int64_t>> prompts;
  for (const char* text : {"The cat sat", "A dog ran to the big red ball and", "Tom"})
    prompts.push_back(s.tokenizer.encode(text, false));
  REQUIRE(models::shared_prompt_prefix(prompts) == 0);
  models::SamplingOptions whole;
  whole.max_new_tokens = 12;
  whole.eos_ids = {-1};
  models::SamplingOptions alone = whole;
  alone.share_prompt_prefix = true;
  auto a = models::generate(s.model, prompts, whole);
  auto b = models::generate(s.model, prompts, alone);
  for (size_t i = 0; i < prompts.size(); ++i) {
    INFO("prompt " << i);
    CHECK(b[i].tokens == a[i].tokens);
    for (size_t t = 0; t < a[i].logprobs.size(); ++t)
      CHECK(b[i].logprobs[t] == Approx(a[i].logprobs[t]).margin(1e-4));
  }
}

TEST_CASE("a shared prefix decodes as the whole prompts in bf16, and a sliding window ignores it",
          "[models][generate][prefix]") {
  std::vector<std::vector<int64_t>> prompts = {
      {1, 5, 9, 4, 7, 2, 8}, {1, 5, 9, 4, 7, 3}, {1, 5, 9, 4, 7, 6, 10, 12, 3}};
  for (const char* name : {"llama_bf16", "mistral_sliding"}) {
    // The bf16 fixture computes in bf16 here (its own weights' dtype), the other in fp32.
    models::LoadOptions load;
    if (std::string(name) == "llama_bf16") load.dtype = torch::kBFloat16;
    auto model = models::load_model(
        testing::source_path(std::string("tests/fixtures/models/") + name), load);
    models::SamplingOptions whole;
    whole.max_new_tokens = 12;
    whole.eos_ids = {-1};
    models::SamplingOptions shared = whole;
    shared.share_prompt_prefix = true;
    auto a = models::generate(model, prompts, whole);
    auto b = models::generate(model, prompts, shared);
    for (size_t i = 0; i < prompts.size(); ++i) {
      INFO(name << " prompt " << i);
      CHECK(b[i].tokens == a[i].tokens);
      for (size_t t = 0; t < a[i].logprobs.size(); ++t) {
        if (std::string(name) == "mistral_sliding")
          CHECK(b[i].logprobs[t] == a[i].logprobs[t]);  // the option is ignored: the same bits
        else
          CHECK(b[i].logprobs[t] == Approx(a[i].logprobs[t]).margin(1e-3));
      }
    }
  }
}
