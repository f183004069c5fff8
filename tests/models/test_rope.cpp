// RoPE's rotation: the CPU loop of a small no-gradient call gives the same bits as the ATen
// operators every other call runs (x cos + rotate_half(x) sin in fp32, then the input's dtype).
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
