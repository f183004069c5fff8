// RMSNorm's CPU loop for a decoding step's rows against the ATen operators every other call runs:
// the same roundings but the sum of squares, which the loop adds in double and rounds once.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "models/linear.h"
#include "models/rms_norm_loop.h"

using namespace citeforge;

namespace {

torch::Tensor normalised_by_operators(const torch::Tensor& x, const torch::Tensor& weight,
                                      double eps) {
  auto h = x.to(torch::kFloat32);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(x.scalar_type());
}

}  // namespace

TEST_CASE("RMSNorm's CPU loop normalises as ATen's operators do, up to the sum's last bit",
          "[models][rms_norm]") {
  torch::manual_seed(21);
  torch::NoGradGuard no_grad;
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    for (int64_t width : {576, 960, 7}) {
      INFO("dtype " << dtype << " width " << width);
      auto weight = torch::randn({width}).to(dtype);
      // Rows of very different scales, a zero row (0 / sqrt(eps) is 0) and a decoding step's
      // [B, 1, width].
      auto x = (torch::randn({5, 1, width}) *
                torch::tensor({1e-3f, 1.0f, 30.0f, 1e3f, 0.0f}).view({5, 1, 1}))
                   .to(dtype);
      auto y = models::rms_norm_loop(x, weight, 1e-5);
      REQUIRE(y.has_value());
      auto reference = normalised_by_operators(x, weight, 1e-5);
      REQUIRE(y->scalar_type() == dtype);
      REQUIRE(y->sizes() == reference.sizes());
      // The mean of squares may differ in its last bit (2^-23 relative at most), which moves
      // the scale by up to 2^-24 beside its own rounding; the two products then round once each
      // (2^-24 in fp32, one bf16 ulp in bf16): 8 x 2^-24 covers it in fp32.
      const double tolerance =
          dtype == torch::kFloat32 ? 8 * std::pow(2.0, -24) : std::pow(2.0, -7);
      auto error = (y->to(torch::kFloat64) - reference.to(torch::kFloat64)).abs();
      CHECK((error - reference.to(torch::kFloat64).abs() * tolerance).max().item<double>() <= 0);
      CHECK((*y)[4].abs().max().item<double>() == 0);
    }
  }
  // A non-finite value makes its row's scale 0 and itself NaN, as the operators do.
  auto weight = torch::ones({64});
  auto bad = torch::randn({2, 64});
  bad[0][3] = std::numeric_limits<float>::infinity();
  auto y = models::rms_norm_loop(bad, weight, 1e-5);
  REQUIRE(y.has_value());
  CHECK(torch::equal(y->isnan(), normalised_by_operators(bad, weight, 1e-5).isnan()));
}

TEST_CASE("RMSNorm keeps ATen's operators under grad mode, for large calls and mixed dtypes",
          "[models][rms_norm]") {
  torch::manual_seed(22);
  models::RMSNorm norm(64, 1e-6);
  {
    torch::NoGradGuard no_grad;
    norm->weight.copy_(torch::randn({64}));
  }
  auto x = torch::randn({1, 3, 64}, torch::requires_grad());
  CHECK_FALSE(models::rms_norm_loop(x, norm->weight, 1e-6).has_value());
  auto y = norm(x);
  CHECK(torch::equal(y, normalised_by_operators(x, norm->weight, 1e-6)));
  y.sum().backward();
  CHECK(x.grad().defined());
  CHECK(norm->weight.grad().defined());
  // Under grad mode a call that needs no gradient keeps the operators too: a frozen model's
  // forward pass gives the bits it gave before its weights were frozen.
  norm->weight.set_requires_grad(false);
  auto plain = torch::randn({1, 3, 64});
  CHECK_FALSE(models::rms_norm_loop(plain, norm->weight, 1e-6).has_value());
  CHECK(torch::equal(norm(plain), normalised_by_operators(plain, norm->weight, 1e-6)));

  torch::NoGradGuard no_grad;
  auto large = torch::randn({1025, 64});  // over the loop's 65536 values: a prompt's pass
  CHECK_FALSE(models::rms_norm_loop(large, norm->weight, 1e-6).has_value());
  CHECK(torch::equal(norm(large), normalised_by_operators(large, norm->weight, 1e-6)));
  CHECK_FALSE(models::rms_norm_loop(x.to(torch::kBFloat16), norm->weight, 1e-6).has_value());
  CHECK_FALSE(models::rms_norm_loop(x.transpose(1, 2), norm->weight, 1e-6).has_value());
  auto small = torch::randn({2, 64});
  CHECK(torch::equal(norm(small), *models::rms_norm_loop(small, norm->weight, 1e-6)));
}
