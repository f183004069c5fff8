// The LoRA term's loops for a decoding step's rows against the ATen operators every other call
// runs (two matmuls, a scale, a cast and an add): equal to fp32 rounding, the same bits on every
// instruction-set path and for a row whatever rows share its call, and never under grad mode.
#include <catch2/catch.hpp>

#include "models/linear.h"
#include "models/lora_rows.h"
#include "tests/models/cpu_kernel_paths.h"

using namespace citeforge;

namespace {

torch::Tensor with_operators(const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& A,
                             const torch::Tensor& B, double scale) {
  auto update = torch::linear(torch::linear(x.to(torch::kFloat32), A), B) * scale;
  return y + update.to(y.scalar_type());
}

}  // namespace

TEST_CASE("the LoRA term's decoding loops add what ATen's operators add, the same on every path",
          "[models][lora_rows]") {
  testing::KernelSettings restore;
  torch::manual_seed(23);
  torch::NoGradGuard no_grad;
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    for (int64_t rows : {1, 3, 8, 32}) {
      for (int64_t rank : {16, 5}) {
        INFO("dtype " << dtype << " rows " << rows << " rank " << rank);
        const int64_t in = 200, out = 70;
        auto x = torch::randn({rows, in}).to(dtype);
        auto y = torch::randn({rows, out}).to(dtype);
        auto A = torch::randn({rank, in}) * 0.1, B = torch::randn({out, rank}) * 0.1;
        const auto expected = with_operators(x, y, A, B, 2.0);
        torch::Tensor first;
        for (auto isa : testing::runnable_paths()) {
          models::force_cpu_isa(isa);
          auto sum = y.clone();
          REQUIRE(models::lora_rows_add_(sum, x, A, B, 2.0));
          const double tolerance = dtype == torch::kFloat32 ? 1e-4 : 0.05;
          CHECK(torch::allclose(sum.to(torch::kFloat32), expected.to(torch::kFloat32), tolerance,
                                tolerance));
          if (!first.defined()) first = sum;
          CHECK(torch::equal(sum, first));
        }
        // Row 1 alone gets the bits it gets beside the others.
        if (rows > 1) {
          auto alone = y.narrow(0, 1, 1).clone();
          REQUIRE(models::lora_rows_add_(alone, x.narrow(0, 1, 1), A, B, 2.0));
          CHECK(torch::equal(alone, first.narrow(0, 1, 1)));
        }
      }
    }
  }
}

TEST_CASE(
    "the LoRA term's loops leave grad mode, large calls, other layouts and decoding with the "
    "kernels off to ATen",
    "[models][lora_rows]") {
  testing::KernelSettings restore;
  torch::manual_seed(24);
  auto x = torch::randn({2, 64}), y = torch::randn({2, 32});
  auto A = torch::randn({4, 64}), B = torch::randn({32, 4});
  const auto before = y.clone();
  CHECK_FALSE(models::lora_rows_add_(y, x, A, B, 1.0));  // grad mode on
  torch::NoGradGuard no_grad;
  auto many = torch::randn({33, 64}), many_y = torch::randn({33, 32});
  CHECK_FALSE(models::lora_rows_add_(many_y, many, A, B, 1.0));
  CHECK_FALSE(models::lora_rows_add_(y, x, A.to(torch::kBFloat16), B, 1.0));
  CHECK_FALSE(models::lora_rows_add_(y, x, A.t().contiguous().t(), B, 1.0));  // not contiguous
  auto narrow_y = torch::randn({2, 64}).narrow(1, 0, 32);
  CHECK_FALSE(models::lora_rows_add_(narrow_y, x, A, B, 1.0));
  models::set_fused_decoding(false);  // the path before the kernels, which benchmarks compare
  CHECK_FALSE(models::lora_rows_add_(y, x, A, B, 1.0));
  CHECK(torch::equal(y, before));
}

TEST_CASE("an adapted layer's decoding step takes the loops and keeps its output",
          "[models][lora_rows]") {
  torch::manual_seed(25);
  models::Linear layer(64, 48);
  layer->add_lora(models::LoraSpec{8, 16, 0.0});
  {
    torch::NoGradGuard no_grad;
    layer->lora_B.normal_(0, 0.1);
  }
  layer->eval();
  auto x = torch::randn({3, 64});
  const auto with_grad_mode = layer(x).detach();
  torch::NoGradGuard no_grad;
  CHECK(torch::allclose(layer(x), with_grad_mode, 1e-5, 1e-5));
}
