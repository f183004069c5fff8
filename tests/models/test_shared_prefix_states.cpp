// A training pass that runs its rows' shared start once must give the states and the gradients
// of the padded pass over the whole rows: the shared keys and values reach every row's
// attention, and backward sums what every row sends back through them.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "models/checkpoint_io.h"
#include "models/lora.h"
#include "models/shared_prefix_states.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_llama.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {

// Three right-padded rows (pad 0) that begin with the same 9 tokens.
torch::Tensor rows_behind_common_start() {
  return torch::tensor({{1, 7, 9, 4, 22, 5, 31, 8, 2, 11, 12, 13, 14, 15, 16, 17},
                        {1, 7, 9, 4, 22, 5, 31, 8, 2, 40, 41, 0, 0, 0, 0, 0},
                        {1, 7, 9, 4, 22, 5, 31, 8, 2, 50, 51, 52, 53, 54, 0, 0}},
                       torch::kInt64);
}

// A fixed linear read of the states, so that backward sends every state its own gradient.
torch::Tensor readout(const torch::Tensor& states) {
  const auto weights = torch::linspace(-1.0, 1.0, states.numel()).reshape(states.sizes());
  return (states * weights).sum();
}

}  // namespace

TEST_CASE("a shared start run once gives the padded pass's states and adapter gradients",
          "[models][prefix]") {
  auto model = testing::adapted_tiny_llama();
  const auto ids = rows_behind_common_start();
  const int64_t shared = 9, T = ids.size(1);
  const auto params = models::lora_parameters(model);

  const auto padded = model->hidden_states(ids).narrow(1, shared, T - shared);
  readout(padded).backward();
  std::vector<torch::Tensor> padded_grads;
  for (auto& [name, p] : params) {
    padded_grads.push_back(p.grad().clone());
    p.mutable_grad().zero_();
  }

  const auto once = models::hidden_states_after_shared_prefix(model, ids, shared);
  REQUIRE(once.sizes() == padded.sizes());
  CHECK((once - padded).abs().max().item<double>() < 1e-5);
  readout(once).backward();
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(params[i].first);
    const auto& want = padded_grads[i];
    const auto got = params[i].second.grad();
    // Every adapter has a gradient; one summed over a single row's use of the shared keys and
    // values, not all three, would differ by far more than rounding.
    CHECK(want.abs().max().item<double>() > 1e-4);
    CHECK((got - want).abs().max().item<double>() <= 1e-4 * want.abs().max().item<double>());
  }
}

TEST_CASE("a shared start run once in bf16 gives the padded pass's states", "[models][prefix]") {
  // A bf16 model on a CPU takes the exact attention path (scores in fp32), not the fused one.
  models::LoadOptions load;
  load.dtype = torch::kBFloat16;
  auto model = models::load_model(testing::source_path("tests/fixtures/models/llama_bf16"), load);
  const auto ids =
      torch::tensor({{1, 5, 9, 4, 7, 2, 8, 3}, {1, 5, 9, 4, 7, 3, 0, 0}}, torch::kInt64);
  torch::NoGradGuard no_grad;
  const auto padded = model->hidden_states(ids).narrow(1, 5, 3).to(torch::kFloat32);
  const auto once = models::hidden_states_after_shared_prefix(model, ids, 5).to(torch::kFloat32);
  CHECK((once - padded).abs().max().item<double>() <= 0.02 * padded.abs().max().item<double>());
}

TEST_CASE("a shared start is refused where it is not one or cannot be run once",
          "[models][prefix][errors]") {
  auto model = testing::adapted_tiny_llama();
  const auto ids = rows_behind_common_start();
  CHECK_THROWS_WITH(models::hidden_states_after_shared_prefix(model, ids, 0),
                    Contains("0 shared tokens of 16"));
  CHECK_THROWS_WITH(models::hidden_states_after_shared_prefix(model, ids, 16),
                    Contains("at least one after them"));
  CHECK_THROWS_WITH(models::hidden_states_after_shared_prefix(model, ids, 10),
                    Contains("do not all begin with the same 10 tokens"));
  model->gradient_checkpointing = true;
  CHECK_THROWS_WITH(models::hidden_states_after_shared_prefix(model, ids, 9),
                    Contains("gradient checkpointing"));
  auto sliding = models::load_model(testing::source_path("tests/fixtures/models/mistral_sliding"));
  CHECK_THROWS_WITH(
      models::hidden_states_after_shared_prefix(sliding, torch::tensor({{1, 5, 9}, {1, 5, 7}}), 2),
      Contains("sliding-window"));
}
