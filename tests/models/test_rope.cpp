// RoPE's rotation: the CPU loop of a small no-gradient call gives the same bits as the ATen
// operators every other call runs (x cos + rotate_half(x) sin in fp32, then the input's dtype),
// written into a cache's slots too; the tables a model caches give rope_tables' bits.
#include <catch2/catch.hpp>

#include "models/rope.h"

using namespace citeforge;

namespace {

torch::Tensor rotated_by_operators(const torch::Tensor& x, const torch::Tensor& cos,
                                   const torch::Tensor& sin) {
  auto xf = x.to(torch::kFloat32);
  auto halves = xf.chunk(2, -1);
  return (xf * cos + torch::cat({-halves[1], halves[0]}, -1) * sin).to(x.scalar_type());
}

}  // namespace

TEST_CASE("RoPE's CPU loop rotates as ATen's operators do, to the bit", "[models][rope]") {
  torch::manual_seed(11);
  models::ModelConfig config;
  config.head_dim = 64;
  config.num_heads = 9;
  config.rope_theta = 100000;
  torch::NoGradGuard no_grad;
  // A decoding step ([B, H, 1, D] from a transposed [B, 1, H, D]), left-padded positions of a
  // few rows, a head size whose halves are not a whole vector, and a pass too large for the loop.
  struct Case {
    int64_t B, H, T, D;
  };
  for (const Case& c :
       {Case{1, 9, 1, 64}, Case{4, 3, 1, 64}, Case{2, 5, 7, 18}, Case{2, 9, 128, 64}}) {
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      INFO("B " << c.B << " H " << c.H << " T " << c.T << " D " << c.D << " "
                << c10::toString(dtype));
      config.head_dim = c.D;
      auto positions = torch::randint(0, 4000, {c.B, c.T}, torch::kInt64);
      auto [cos, sin] = models::rope_tables(positions, config);
      // As the attention makes them: [B, T, H, D] projections viewed as [B, H, T, D].
      auto x = (torch::randn({c.B, c.T, c.H, c.D}) * 3).to(dtype).transpose(1, 2);
      const auto want = rotated_by_operators(x, cos, sin);
      const auto got = models::apply_rope(x, cos, sin);
      CHECK(got.scalar_type() == dtype);
      CHECK(torch::equal(got, want));
    }
  }
}

TEST_CASE("RoPE keeps its gradient where one is needed", "[models][rope]") {
  models::ModelConfig config;
  config.head_dim = 8;
  auto [cos, sin] = models::rope_tables(torch::arange(3).unsqueeze(0), config);
  auto x = torch::randn({1, 2, 3, 8}, torch::requires_grad());
  auto y = models::apply_rope(x, cos, sin);
  REQUIRE(y.requires_grad());
  y.sum().backward();
  // d/dx of sum(x cos + rotate_half(x) sin): cos[i] + sin of the slot x[i] is rotated into.
  auto expected = cos + torch::cat({sin.narrow(-1, 4, 4), -sin.narrow(-1, 0, 4)}, -1);
  CHECK(torch::allclose(x.grad(), expected.expand_as(x), 1e-6, 1e-6));
}

TEST_CASE("RoPE's table cache gives rope_tables' bits and serves only what it can",
          "[models][rope]") {
  torch::manual_seed(12);
  models::ModelConfig plain;
  plain.head_dim = 64;
  plain.rope_theta = 100000;
  plain.max_positions = 8192;
  // A head size that is not a whole number of vectors, and every RoPE type whose tables depend
  // on the position alone (yarn's also scaled by its attention factor).
  models::ModelConfig odd = plain, linear = plain, llama3 = plain, yarn = plain;
  odd.head_dim = 80;
  linear.rope_scaling.type = "linear";
  linear.rope_scaling.factor = 2.0;
  llama3.rope_scaling = {"llama3", 8.0, 1024, 1.0, 4.0};
  yarn.rope_scaling.type = "yarn";
  yarn.rope_scaling.factor = 4.0;
  yarn.rope_scaling.original_max_positions = 2048;
  torch::NoGradGuard no_grad;
  for (const auto* config : {&plain, &odd, &linear, &llama3, &yarn}) {
    INFO("RoPE type " << config->rope_scaling.type << ", head_dim " << config->head_dim);
    models::RopeTableCache cache;
    const auto same = [&](const torch::Tensor& positions) {
      const auto want = models::rope_tables(positions, *config);
      const auto got = models::rope_tables(positions, *config, cache);
      CHECK(got.first.sizes() == want.first.sizes());
      CHECK(torch::equal(got.first, want.first));
      CHECK(torch::equal(got.second, want.second));
    };
    {
      c10::InferenceMode inference;                         // as generation calls it
      same(torch::randint(0, 200, {4, 1}, torch::kInt64));  // a decoding step of four rows
    }
    CHECK(cache.rows == 256);
    CHECK_FALSE(cache.cos.is_inference());  // training may read what generation built
    same(torch::tensor({1000}, torch::kInt64).unsqueeze(0));  // grows the cache to 1024
    CHECK(cache.rows == 1024);
    same(torch::randint(0, 1024, {2, 7}, torch::kInt64));
    // Positions the cache does not take: past its limit, or too many for one call.
    same(torch::tensor({70000}, torch::kInt64).unsqueeze(0));
    same(torch::arange(5000, torch::kInt64).unsqueeze(0));
    CHECK(cache.rows == 1024);
  }
  // Dynamic NTK's tables depend on the longest position of the call: never cached.
  models::ModelConfig dynamic = plain;
  dynamic.rope_scaling.type = "dynamic";
  dynamic.rope_scaling.factor = 2.0;
  models::RopeTableCache cache;
  const auto positions = torch::tensor({9000}, torch::kInt64).unsqueeze(0);
  CHECK(torch::equal(models::rope_tables(positions, dynamic, cache).first,
                     models::rope_tables(positions, dynamic).first));
  CHECK(cache.rows == 0);
}

TEST_CASE("RoPE written into a cache's slots gives apply_rope's bits", "[models][rope]") {
  torch::manual_seed(13);
  models::ModelConfig config;
  config.head_dim = 64;
  torch::NoGradGuard no_grad;
  // A decoding step's keys into slot 40 of a 64-slot cache, a few rows' prompt into slots 3-9,
  // and a pass too large for the loop (rotated by the operators, then copied in).
  struct Case {
    int64_t B, H, T, first_slot, capacity;
  };
  for (const Case& c : {Case{1, 3, 1, 40, 64}, Case{4, 3, 7, 3, 16}, Case{2, 3, 400, 0, 512}}) {
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      INFO("B " << c.B << " T " << c.T << " " << c10::toString(dtype));
      auto positions = torch::randint(0, 4000, {c.B, c.T}, torch::kInt64);
      auto [cos, sin] = models::rope_tables(positions, config);
      auto x = torch::randn({c.B, c.T, c.H, 64}).to(dtype).transpose(1, 2);
      auto cache = torch::zeros({c.B, c.H, c.capacity, 64}, dtype);
      models::apply_rope_into(x, cos, sin, cache.narrow(2, c.first_slot, c.T));
      CHECK(torch::equal(cache.narrow(2, c.first_slot, c.T), models::apply_rope(x, cos, sin)));
      // Nothing outside the slots is touched.
      CHECK(cache.narrow(2, 0, c.first_slot).eq(0).all().item<bool>());
      CHECK(cache.narrow(2, c.first_slot + c.T, c.capacity - c.first_slot - c.T)
                .eq(0)
                .all()
                .item<bool>());
    }
  }
}
