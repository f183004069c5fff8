// LoRA layers against peft (fixtures from scripts/make_qlora_fixtures.py), initialisation,
// target selection and adapters on/off.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "models/checkpoint_io.h"
#include "models/lora.h"
#include "models/safetensors.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

TEST_CASE("a LoRA linear layer computes what peft's does", "[models][lora][peft]") {
  auto ref =
      models::open_safetensors(testing::source_path("tests/fixtures/lora/lora_linear.safetensors"));
  auto weight = ref.get("weight");
  auto lora_A = ref.get("lora_A");
  models::Linear layer(weight.size(1), weight.size(0));
  const int64_t r = lora_A.size(0);
  REQUIRE(std::to_string(r) == ref.metadata.at("r"));
  layer->add_lora({r, std::stod(ref.metadata.at("lora_alpha")), 0.0});
  CHECK(layer->lora_scale == std::stod(ref.metadata.at("scaling")));
  {
    torch::NoGradGuard no_grad;
    layer->weight.copy_(weight);
    layer->lora_A.copy_(lora_A);
    layer->lora_B.copy_(ref.get("lora_B"));
  }
  layer->eval();
  auto y = layer(ref.get("x"));
  CHECK((y - ref.get("y")).abs().max().item<double>() < 1e-5);
  // The same with an NF4 base differs from peft's output only by the quantisation error.
  layer->quantize_nf4();
  auto yq = layer(ref.get("x"));
  CHECK((yq - ref.get("y")).abs().max().item<double>() <
        0.1 * ref.get("y").abs().max().item<double>());
}

TEST_CASE("fresh adapters leave the model unchanged and only they train", "[models][lora]") {
  auto model = models::load_model(testing::source_path("tests/fixtures/models/llama_tied"));
  auto ids = torch::randint(0, model->config.vocab_size, {2, 7});
  auto before = model->forward(ids);
  models::LoraConfig config;
  config.spec = {4, 8, 0.0};
  auto adapted = models::attach_lora(model, config);
  CHECK(adapted.size() == 7 * size_t(model->config.num_layers));
  CHECK(torch::equal(model->forward(ids), before));  // B starts at zero
  int64_t trainable = 0;
  for (auto& p : model->named_parameters())
    if (p.value().requires_grad()) {
      INFO(p.key());
      CHECK((p.key().find("lora_A") != std::string::npos ||
             p.key().find("lora_B") != std::string::npos));
      trainable += p.value().numel();
    }
  CHECK(trainable > 0);
  // A's Kaiming-uniform bound is 1 / sqrt(in_features) (a = sqrt(5)), as in peft.
  auto& first = model->named_parameters()["model.layers.0.self_attn.q_proj.lora_A"];
  CHECK(first.abs().max().item<double>() <= 1.0 / std::sqrt(double(model->config.hidden_size)));
  // Adapters with non-zero B change the output; switching them off gives the base back.
  {
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : models::lora_parameters(model)) t.normal_(0, 0.1);
  }
  CHECK_FALSE(torch::allclose(model->forward(ids), before));
  {
    models::AdaptersDisabled off(model);
    CHECK(torch::equal(model->forward(ids), before));
  }
  CHECK_FALSE(torch::allclose(model->forward(ids), before));
}

TEST_CASE("LoRA targets are chosen by module name", "[models][lora]") {
  auto model = models::load_model(testing::source_path("tests/fixtures/models/llama_tied"));
  models::LoraConfig config;
  config.target_modules = {"q_proj", "v_proj"};
  auto adapted = models::attach_lora(model, config);
  CHECK(adapted.size() == 2 * size_t(model->config.num_layers));
  for (const auto& name : adapted)
    CHECK((name.find("q_proj") != std::string::npos || name.find("v_proj") != std::string::npos));
  auto other = models::load_model(testing::source_path("tests/fixtures/models/llama_tied"));
  config.target_modules = {"qkv"};
  CHECK_THROWS_WITH(models::attach_lora(other, config),
                    Contains("lora.target_modules") && Contains("qkv"));
}

TEST_CASE("the reference policy is the kept adapter, or the base without one", "[models][lora]") {
  auto model = models::load_model(testing::source_path("tests/fixtures/models/llama_tied"));
  auto ids = torch::randint(0, model->config.vocab_size, {1, 6});
  auto base = model->forward(ids);
  models::LoraConfig config;
  config.spec = {4, 8, 0.0};
  models::attach_lora(model, config);
  auto perturb = [&] {
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : models::lora_parameters(model)) t.add_(torch::randn_like(t) * 0.1);
  };
  perturb();
  auto sft = model->forward(ids);
  {
    models::ReferencePolicy reference(model);  // nothing kept: the base
    CHECK(torch::equal(model->forward(ids), base));
  }
  models::keep_reference_adapters(model);
  perturb();  // PPO moves the trained adapter on
  auto ppo = model->forward(ids);
  CHECK_FALSE(torch::allclose(ppo, sft));
  {
    models::ReferencePolicy reference(model);
    CHECK(torch::equal(model->forward(ids), sft));
  }
  CHECK(torch::equal(model->forward(ids), ppo));
  models::clear_reference_adapters(model);
  models::ReferencePolicy reference(model);
  CHECK(torch::equal(model->forward(ids), base));
}

TEST_CASE("an adapter folded into the base for a pass over many rows computes the same layer",
          "[models][lora]") {
  // With no gradient on a CPU and enough rows (a prefill, PPO's scoring pass), the adapter is
  // added to the base weight once instead of applied to every row; the output must be the one
  // the rows' own adapter path gives, which a pass with gradients takes.
  torch::manual_seed(3);
  models::Linear layer(48, 40, true, /*with_bias=*/true);
  layer->add_lora({8, 16.0, 0.0});
  {
    torch::NoGradGuard no_grad;
    layer->bias.normal_();
    layer->lora_B.normal_(0, 0.1);
    layer->reference_A = torch::randn_like(layer->lora_A);
    layer->reference_B = torch::randn_like(layer->lora_B);
  }
  layer->eval();
  const auto x = torch::randn({2, 32, 48});  // 64 rows: 64 * (48 + 40) > 48 * 40
  const auto compare = [&](const char* what) {
    INFO(what);
    const auto rows_path = layer(x).detach();  // gradients on: the adapter on the rows
    torch::NoGradGuard no_grad;
    const auto folded = layer(x);
    CHECK((folded - rows_path).abs().max().item<double>() <
          1e-5 * rows_path.abs().max().item<double>());
    return rows_path;
  };
  const auto trained = compare("the trained adapter");
  layer->use_reference = true;
  const auto reference = compare("the reference adapter");
  CHECK_FALSE(torch::allclose(reference, trained));
  layer->use_reference = false;
  layer->quantize_nf4();
  compare("over an NF4 base");
  layer->adapter_enabled = false;
  compare("the adapter off");
}
