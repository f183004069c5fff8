// Gradient checkpointing recomputes blocks in the backward pass; the gradients (dropout
// included) must equal those of the plain forward pass, and the random stream must go on as
// if nothing had been recomputed.
#include <catch2/catch.hpp>

#include "models/checkpoint_io.h"
#include "models/grad_checkpoint.h"
#include "models/lora.h"
#include "tests/support/test_paths.h"

using namespace citeforge;

namespace {

struct Gradients {
  std::vector<torch::Tensor> grads;
  torch::Tensor loss, rng_after;
};

Gradients train_step(bool checkpointing, torch::Device device = torch::kCPU) {
  auto model = models::load_model(testing::source_path("tests/fixtures/models/mistral_sliding"));
  model->to(device);
  torch::manual_seed(4);
  models::LoraConfig config;
  config.spec = {4, 8, 0.3};  // dropout, so the replayed random state matters
  models::attach_lora(model, config);
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : models::lora_parameters(model)) t.normal_(0, 0.1);
  }
  model->train();
  model->gradient_checkpointing = checkpointing;
  torch::manual_seed(9);
  auto ids = torch::randint(0, model->config.vocab_size, {2, 11}).to(device);
  auto logits = model->forward(ids);
  auto loss = torch::nn::functional::cross_entropy(
      logits.narrow(1, 0, 10).reshape({-1, logits.size(-1)}), ids.narrow(1, 1, 10).reshape({-1}));
  loss.backward();
  Gradients out;
  out.loss = loss.detach();
  for (auto& [name, t] : models::lora_parameters(model)) out.grads.push_back(t.grad().clone());
  out.rng_after = torch::rand({4}, torch::TensorOptions().device(device));
  return out;
}

// One training step with and without checkpointing on `device`: the same loss, gradients within
// rounding, and the random stream left where the plain pass leaves it.
void check_recomputed_equals_plain(torch::Device device, double rtol, double atol) {
  auto plain = train_step(false, device);
  auto recomputed = train_step(true, device);
  CHECK(torch::equal(plain.loss, recomputed.loss));
  REQUIRE(plain.grads.size() == recomputed.grads.size());
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    INFO("adapter tensor " << i);
    CHECK(torch::allclose(plain.grads[i], recomputed.grads[i], rtol, atol));
  }
  CHECK(torch::equal(plain.rng_after, recomputed.rng_after));
}

}  // namespace

TEST_CASE("gradient checkpointing gives the plain forward pass's gradients",
          "[models][checkpointing]") {
  check_recomputed_equals_plain(torch::kCPU, 1e-5, 1e-7);
}

// On a GPU dropout draws from the device's generator, which the recomputation must replay too.
TEST_CASE("gradient checkpointing on a GPU gives the plain forward pass's gradients",
          "[models][checkpointing][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device: checkpointing's GPU replay is checked on a GPU machine");
    return;
  }
  check_recomputed_equals_plain(torch::kCUDA, 1e-4, 1e-6);
}

TEST_CASE("a checkpointed block passes gradients to its input", "[models][checkpointing]") {
  auto w = torch::randn({3, 3}).requires_grad_(true);
  auto x = torch::randn({2, 3}).requires_grad_(true);
  auto block = [&](const torch::Tensor& h) { return torch::tanh(torch::matmul(h, w)); };
  models::checkpointed(block, x).sum().backward();
  auto gx = x.grad().clone(), gw = w.grad().clone();
  x.mutable_grad().zero_();
  w.mutable_grad().zero_();
  block(x).sum().backward();
  CHECK(torch::allclose(gx, x.grad()));
  CHECK(torch::allclose(gw, w.grad()));
}
