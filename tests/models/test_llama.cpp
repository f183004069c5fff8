// The decoder against HF transformers: fixtures made by scripts/make_model_fixtures.py.
#include <catch2/catch.hpp>

#include "models/checkpoint_io.h"
#include "models/generate.h"
#include "models/tokenizer.h"
#include "tests/support/test_paths.h"

using namespace citeforge;

namespace {

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().max().item<double>();
}

void check_fixture(const std::string& name) {
  const auto dir = testing::source_path("tests/fixtures/models/" + name);
  auto model = models::load_model(dir);
  auto expected = models::open_safetensors(dir + "/expected.safetensors");
  auto logits = model->forward(expected.get("input_ids"));
  INFO(name << ": max |logit| " << expected.get("logits").abs().max().item<double>());
  CHECK(logits.sizes() == expected.get("logits").sizes());
  CHECK(max_abs_diff(logits, expected.get("logits")) < 1e-4);
}

}  // namespace

TEST_CASE("Mistral with a sliding window, untied head, theta 1e6 and wide heads matches HF",
          "[models][llama][hf]") {
  auto config = models::read_model_config(
      testing::source_path("tests/fixtures/models/mistral_sliding/config.json"));
  REQUIRE(config.sliding_window);
  REQUIRE(config.head_dim * config.num_heads != config.hidden_size);
  REQUIRE_FALSE(config.tie_word_embeddings);
  check_fixture("mistral_sliding");
}

TEST_CASE("Llama with bf16 weights matches HF in fp32", "[models][llama][hf]") {
  auto ckpt = models::open_safetensors(testing::source_path("tests/fixtures/models/llama_bf16"));
  REQUIRE(ckpt.get("model.embed_tokens.weight").scalar_type() == torch::kBFloat16);
  check_fixture("llama_bf16");
}

TEST_CASE("Llama with tied embeddings and theta 5e5 matches HF", "[models][llama][hf]") {
  check_fixture("llama_tied");
}

TEST_CASE("stories260K: greedy decoding and logits match HF transformers", "[models][llama][hf]") {
  const auto dir = testing::fixture_path("models/stories260K");
  auto model = models::load_model(dir);
  models::Tokenizer tokenizer(dir + "/tokenizer.model");
  auto expected = models::open_safetensors(
      testing::source_path("tests/fixtures/models/stories260K/expected.safetensors"));
  auto prompt = tokenizer.encode("Once upon a time", /*add_bos=*/true);
  auto expected_prompt = expected.get("prompt_ids");
  REQUIRE(prompt ==
          std::vector<int64_t>(expected_prompt.data_ptr<int64_t>(),
                               expected_prompt.data_ptr<int64_t>() + expected_prompt.numel()));

  models::SamplingOptions greedy;
  greedy.max_new_tokens = 64;
  greedy.eos_ids = {-1};  // HF was run without EOS stopping, so exactly 64 tokens compare
  auto out = models::generate(model, {prompt}, greedy);
  auto expected_tokens = expected.get("generated_ids");
  CHECK(out[0].tokens ==
        std::vector<int64_t>(expected_tokens.data_ptr<int64_t>(),
                             expected_tokens.data_ptr<int64_t>() + expected_tokens.numel()));

  auto all = torch::cat({expected_prompt, expected_tokens}).unsqueeze(0);
  auto logits = model->forward(all)[0];
  CHECK(max_abs_diff(logits, expected.get("logits")) < 1e-4);
  // The log-probabilities generate() returns are those of the full forward pass.
  auto log_probs = torch::log_softmax(logits, -1);
  const int64_t P = expected_prompt.numel();
  for (size_t i = 0; i < out[0].tokens.size(); ++i)
    CHECK(out[0].logprobs[i] ==
          Approx(log_probs[P - 1 + i][out[0].tokens[i]].item<float>()).margin(1e-4));
}

TEST_CASE("incremental decoding with the KV cache equals a full forward", "[models][llama][kv]") {
  for (const char* name : {"mistral_sliding", "llama_tied"}) {
    auto model =
        models::load_model(testing::source_path(std::string("tests/fixtures/models/") + name));
    torch::NoGradGuard no_grad;
    auto ids = torch::randint(0, model->config.vocab_size, {2, 14}, torch::kInt64);
    auto full = model->forward(ids);
    auto cache = models::make_kv_cache(model->config, 2, 14, torch::kFloat32);
    std::vector<torch::Tensor> pieces;
    int64_t start = 0;
    for (int64_t len : {5, 1, 3, 1, 4}) {  // prefill, then steps of varying size
      models::AttentionInputs in;
      in.positions = torch::arange(start, start + len, torch::kInt64).unsqueeze(0).expand({2, len});
      pieces.push_back(model->logits(model->hidden_states(ids.narrow(1, start, len), in, &cache)));
      start += len;
    }
    INFO(name);
    CHECK(cache.length == 14);
    CHECK(max_abs_diff(torch::cat(pieces, 1), full) < 1e-5);
  }
}

TEST_CASE("packed rows fill the cache and give the hidden states of the padded batch",
          "[models][llama][kv][prefix]") {
  // Three rows after 4 cached slots: 2, 5 and 3 new tokens in a width of 5. Through the padded
  // batch, then packed into one sequence of 10 tokens; the real tokens' hidden states and every
  // real slot of the cache must agree (the padding slots of the packed cache stay empty).
  for (const char* name : {"llama_tied", "llama_bf16"}) {
    models::LoadOptions load;
    if (std::string(name) == "llama_bf16") load.dtype = torch::kBFloat16;
    auto model = models::load_model(
        testing::source_path(std::string("tests/fixtures/models/") + name), load);
    torch::NoGradGuard no_grad;
    const std::vector<int64_t> own = {2, 5, 3};
    const int64_t B = 3, past = 4, width = 5;
    auto prefix = torch::randint(0, model->config.vocab_size, {1, past}, torch::kInt64);
    auto rest = torch::randint(0, model->config.vocab_size, {B, width}, torch::kInt64);
    const auto options = model->parameters().front().options();
    auto fill_prefix = [&](models::KVCache& cache) {
      models::AttentionInputs in{torch::arange(past, torch::kInt64).unsqueeze(0).expand({B, past}),
                                 {}};
      model->hidden_states(prefix.expand({B, past}), in, &cache);
    };
    const auto inputs = models::after_shared_prefix_inputs(own, past, width, torch::kCPU);
    auto padded_cache = models::make_kv_cache(model->config, B, past + width, options);
    fill_prefix(padded_cache);
    auto padded = model->hidden_states(rest, inputs, &padded_cache);

    auto packed_cache = models::make_kv_cache(model->config, B, past + width, options);
    fill_prefix(packed_cache);
    std::vector<torch::Tensor> ids, positions;
    for (int64_t b = 0; b < B; ++b) {
      ids.push_back(rest[b].narrow(0, width - own[size_t(b)], own[size_t(b)]));
      positions.push_back(inputs.positions[b].narrow(0, width - own[size_t(b)], own[size_t(b)]));
    }
    models::AttentionInputs packed_inputs{
        torch::cat(positions).unsqueeze(0), inputs.key_mask, {own, width}};
    auto packed = model->hidden_states(torch::cat(ids).unsqueeze(0), packed_inputs, &packed_cache);
    INFO(name);
    REQUIRE(packed.sizes() == std::vector<int64_t>{1, 10, model->config.hidden_size});
    CHECK(packed_cache.length == padded_cache.length);
    const double tolerance = std::string(name) == "llama_bf16" ? 2e-2 : 1e-5;
    int64_t offset = 0;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = own[size_t(b)], first = width - n;
      INFO("row " << b);
      CHECK(max_abs_diff(packed[0].narrow(0, offset, n), padded[b].narrow(0, first, n)) <
            tolerance);
      for (size_t layer = 0; layer < padded_cache.keys.size(); ++layer) {
        for (bool keys : {true, false}) {
          const auto& mine = (keys ? packed_cache.keys : packed_cache.values)[layer][b];
          const auto& theirs = (keys ? padded_cache.keys : padded_cache.values)[layer][b];
          CHECK(max_abs_diff(mine.narrow(1, 0, past), theirs.narrow(1, 0, past)) == 0);
          CHECK(max_abs_diff(mine.narrow(1, past + first, n), theirs.narrow(1, past + first, n)) <
                tolerance);
        }
      }
      offset += n;
    }
    // Packed rows need the cache their rows live in.
    CHECK_THROWS_WITH(model->hidden_states(torch::cat(ids).unsqueeze(0), packed_inputs),
                      Catch::Matchers::Contains("packed rows"));
  }
}

TEST_CASE("a batch of prompts of different lengths decodes like each prompt alone",
          "[models][generate]") {
  for (const char* name : {"mistral_sliding", "llama_bf16"}) {
    auto model =
        models::load_model(testing::source_path(std::string("tests/fixtures/models/") + name));
    std::vector<std::vector<int64_t>> prompts = {{1, 5, 9}, {1, 7, 3, 8, 2, 6, 11}, {1, 4}};
    models::SamplingOptions greedy;
    greedy.max_new_tokens = 12;
    greedy.eos_ids = {-1};
    auto batched = models::generate(model, prompts, greedy);
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto alone = models::generate(model, {prompts[i]}, greedy);
      INFO(name << " prompt " << i);
      CHECK(batched[i].tokens == alone[0].tokens);
      for (size_t t = 0; t < alone[0].logprobs.size(); ++t)
        CHECK(batched[i].logprobs[t] == Approx(alone[0].logprobs[t]).margin(1e-4));
    }
  }
}

TEST_CASE("rows that finish early leave the batch and the others decode as if alone",
          "[models][generate]") {
  for (const char* name : {"mistral_sliding", "llama_bf16"}) {
    auto model =
        models::load_model(testing::source_path(std::string("tests/fixtures/models/") + name));
    std::vector<std::vector<int64_t>> prompts = {
        {1, 5, 9}, {1, 7, 3, 8, 2, 6, 11}, {1, 4}, {1, 12, 13, 2}};
    for (const bool greedy : {true, false}) {
      models::SamplingOptions o;
      o.max_new_tokens = 12;
      o.greedy = greedy;
      o.temperature = 0.9;
      o.seed = 5;
      o.eos_ids = {-1};
      std::vector<std::vector<int64_t>> free_runs;
      for (size_t i = 0; i < prompts.size(); ++i) {
        o.first_row = int64_t(i);
        free_runs.push_back(models::generate(model, {prompts[i]}, o)[0].tokens);
      }
      // The first row ends at its second token and the second at its third, so a quarter of the
      // batch is finished after two steps and is dropped from it.
      o.eos_ids = {free_runs[0][1], free_runs[1][2]};
      o.first_row = 0;
      auto batched = models::generate(model, prompts, o);
      CHECK(batched[0].tokens.size() <= 2);
      for (size_t i = 0; i < prompts.size(); ++i) {
        o.first_row = int64_t(i);
        auto alone = models::generate(model, {prompts[i]}, o)[0];
        INFO(name << (greedy ? " greedy" : " sampled") << " prompt " << i);
        CHECK(batched[i].tokens == alone.tokens);
        CHECK(batched[i].finish_reason == alone.finish_reason);
        REQUIRE(batched[i].logprobs.size() == alone.logprobs.size());
        for (size_t t = 0; t < alone.logprobs.size(); ++t)
          CHECK(batched[i].logprobs[t] == Approx(alone.logprobs[t]).margin(1e-4));
      }
    }
  }
}

TEST_CASE("the attention mask combines causality, padding and the sliding window",
          "[models][llama]") {
  auto key_mask = torch::tensor({{0, 1, 1, 1}}, torch::kBool);
  auto allowed = models::attention_allowed(key_mask, 1, 0, 4, 2, torch::kCPU)[0];
  auto expected =
      torch::tensor({{0, 0, 0, 0}, {0, 1, 0, 0}, {0, 1, 1, 0}, {0, 0, 1, 1}}, torch::kBool);
  CHECK(torch::equal(allowed, expected));
}

TEST_CASE("the attention bias is 0 where allowed and finite where not, so padded rows stay finite",
          "[models][llama]") {
  auto key_mask = torch::tensor({{0, 0, 1, 1}}, torch::kBool);
  auto allowed = models::attention_allowed(key_mask, 1, 0, 4, std::nullopt, torch::kCPU);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    auto bias = models::attention_bias(allowed, dtype);
    REQUIRE(bias.sizes() == torch::IntArrayRef({1, 1, 4, 4}));
    CHECK(bias.scalar_type() == dtype);
    CHECK(torch::isfinite(bias).all().item<bool>());
    CHECK(torch::equal(bias[0][0].eq(0), allowed[0]));
    // The first two queries are padding with no key to attend to: fused attention must still
    // give them finite outputs.
    auto q = torch::randn({1, 2, 4, 8}).to(dtype);
    auto out = torch::scaled_dot_product_attention(q, q, q, bias);
    CHECK(torch::isfinite(out.to(torch::kFloat32)).all().item<bool>());
  }
}

TEST_CASE("the bias a forward pass builds has the operators' values, from its loop too",
          "[models][llama]") {
  torch::manual_seed(5);
  struct Case {
    int64_t batch, past, new_tokens;
    std::optional<int64_t> window;
    bool masked;
  };
  // Decoding steps of one and of several padded rows, a prompt's pass, a window, and a pass
  // too large for the loop (ATen's operators then).
  for (const Case& c : {Case{1, 96, 1, std::nullopt, false}, Case{4, 40, 1, std::nullopt, true},
                        Case{3, 0, 9, std::nullopt, true}, Case{2, 12, 5, 4, true},
                        Case{2, 600, 1100, std::nullopt, true}}) {
    const int64_t total = c.past + c.new_tokens;
    auto key_mask = c.masked ? torch::rand({c.batch, total}) > 0.3 : torch::Tensor();
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      INFO("batch " << c.batch << " past " << c.past << " new " << c.new_tokens << " "
                    << c10::toString(dtype));
      const auto want = models::attention_bias(
          models::attention_allowed(key_mask, c.batch, c.past, c.new_tokens, c.window, torch::kCPU),
          dtype);
      const auto got = models::attention_bias_of(key_mask, c.batch, c.past, c.new_tokens, c.window,
                                                 torch::kCPU, dtype);
      CHECK(got.scalar_type() == dtype);
      CHECK(got.sizes() == want.sizes());
      CHECK(torch::equal(got, want));
    }
  }
}

TEST_CASE("a bf16 model's fp32 logits through tied embeddings follow the embeddings' changes",
          "[models][llama]") {
  auto model = models::load_model(testing::source_path("tests/fixtures/models/llama_tied"),
                                  torch::kBFloat16);
  REQUIRE(!model->lm_head);
  torch::NoGradGuard no_grad;
  auto hidden = torch::randn({2, 3, model->config.hidden_size});
  auto expected = [&] {
    return torch::linear(hidden, model->model->embed_tokens->weight.to(torch::kFloat32));
  };
  CHECK(torch::equal(model->logits(hidden), expected()));
  // The kept fp32 copy must not outlive a change of the weights (an in-place load, a merge).
  model->model->embed_tokens->weight.mul_(2);
  CHECK(torch::equal(model->logits(hidden), expected()));
  CHECK(model->logits(hidden.to(torch::kBFloat16)).scalar_type() == torch::kBFloat16);
}

namespace {

// Logits of `ids` with left padding in `key_mask` and the gradient of their sum at the final
// norm's weight, through the fused kernel or (with `exact`, which a probe of the attention
// weights forces) the exact attention.
std::pair<torch::Tensor, torch::Tensor> padded_logits_and_grad(models::LlamaForCausalLM& model,
                                                               const torch::Tensor& ids,
                                                               const torch::Tensor& key_mask,
                                                               bool exact) {
  models::AttentionInputs in;
  in.key_mask = key_mask;
  in.positions = (key_mask.to(torch::kInt64).cumsum(1) - 1).clamp_min(0);
  models::ForwardProbe probe;
  probe.attention = exact;
  auto& weight = model->model->norm->weight;
  weight.mutable_grad() = torch::Tensor();
  auto logits = model->logits(model->hidden_states(ids, in, nullptr, exact ? &probe : nullptr))
                    .to(torch::kFloat32);
  auto valid = key_mask.unsqueeze(-1).to(torch::kFloat32);
  (logits * valid).sum().backward();
  return {(logits * valid).detach().cpu(), weight.grad().to(torch::kFloat32).cpu()};
}

}  // namespace

// A bf16 model's pass over whole sequences on a GPU attends through ATen's fused kernel (the
// exact path's fp32 scores, held for the backward pass, cost 16 GiB at a 7B shape): with padding,
// grouped kv heads and a sliding window, it must differ from the exact attention by no more than
// bf16 itself differs from fp32, in the logits and in a gradient.
TEST_CASE("on a GPU a bf16 model's fused attention gives the exact attention's values",
          "[models][llama][cuda]") {
  CHECK_FALSE(models::fused_attention_applies(torch::kBFloat16, torch::kCPU, 0, false));
  CHECK(models::fused_attention_applies(torch::kFloat32, torch::kCPU, 9, false));
  CHECK_FALSE(models::fused_attention_applies(torch::kFloat32, torch::kCPU, 0, true));
  // A decoding step of a bf16 model keeps the exact path on a GPU too.
  CHECK(models::fused_attention_applies(torch::kBFloat16, torch::kCUDA, 0, false));
  CHECK_FALSE(models::fused_attention_applies(torch::kBFloat16, torch::kCUDA, 9, false));
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device: the fused bf16 attention is checked on a GPU machine");
    return;
  }
  for (const char* name : {"llama_bf16", "mistral_sliding"}) {
    const auto dir = testing::source_path(std::string("tests/fixtures/models/") + name);
    auto reference = models::load_model(dir, torch::kFloat32, torch::kCUDA);
    auto model = models::load_model(dir, torch::kBFloat16, torch::kCUDA);
    reference->model->norm->weight.requires_grad_(true);
    model->model->norm->weight.requires_grad_(true);
    torch::manual_seed(3);
    auto ids = torch::randint(0, model->config.vocab_size, {3, 40}, torch::kInt64).to(torch::kCUDA);
    auto key_mask = torch::ones({3, 40}, torch::kBool);
    key_mask[0].narrow(0, 0, 7).fill_(false);   // left padding
    key_mask[2].narrow(0, 0, 31).fill_(false);  // mostly padding
    key_mask = key_mask.to(torch::kCUDA);
    auto [fp32_logits, fp32_grad] = padded_logits_and_grad(reference, ids, key_mask, false);
    auto [fused_logits, fused_grad] = padded_logits_and_grad(model, ids, key_mask, false);
    auto [exact_logits, exact_grad] = padded_logits_and_grad(model, ids, key_mask, true);
    INFO(name << ": |bf16 exact - fp32| " << max_abs_diff(exact_logits, fp32_logits)
              << ", |fused - exact| " << max_abs_diff(fused_logits, exact_logits));
    CHECK(torch::isfinite(fused_logits).all().item<bool>());
    CHECK(max_abs_diff(fused_logits, exact_logits) <=
          2 * max_abs_diff(exact_logits, fp32_logits) + 1e-3);
    CHECK(max_abs_diff(fused_grad, exact_grad) <= 2 * max_abs_diff(exact_grad, fp32_grad) + 1e-2);
  }
}
