// The decoding step's attention kernel (models/cpu_attention.*) checked as llm.c checks a
// kernel: against the exact path's own arithmetic written in ATen operators, on random shapes
// (odd head sizes, one slot, grouped and ungrouped heads, masked slots), within what that path
// itself differs from an fp64 computation, and every instruction-set path against the others.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "models/cpu_attention.h"
#include "models/cpu_matvec.h"
#include "models/fused_matmul.h"
#include "tests/models/cpu_kernel_paths.h"

using namespace citeforge;
using models::CpuIsa;
using testing::KernelSettings;
using testing::runnable_paths;

namespace {

// The exact attention of models/llama.cpp in ATen operators: the group's queries stacked per kv
// head, scores in the inputs' dtype then fp32, the fp32 softmax of scores + bias, probabilities
// back in the inputs' dtype times the values. With fp64 inputs, the same without roundings.
torch::Tensor exact_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const torch::Tensor& bias, int64_t groups) {
  const int64_t B = q.size(0), H = q.size(1), D = q.size(3), S = k.size(2);
  const auto wide = q.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  auto stacked = q.reshape({B, H / groups, groups, D});
  auto scores = torch::matmul(stacked, k.transpose(-2, -1)).view({B, H, 1, S}).to(wide) /
                std::sqrt(double(D));
  if (bias.defined()) scores = scores + bias.to(wide);
  auto probs = torch::softmax(scores, -1).to(q.scalar_type());
  return torch::matmul(probs.view({B, H / groups, groups, S}), v).view({B, H, 1, D});
}

// A [B, 1, 1, S] bias that masks the first `masked[b]` slots of row b (left padding) with the
// dtype's lowest value, as models::attention_bias does.
torch::Tensor padding_bias(const std::vector<int64_t>& masked, int64_t S) {
  auto bias = torch::zeros({int64_t(masked.size()), 1, 1, S});
  for (size_t b = 0; b < masked.size(); ++b)
    bias[int64_t(b)].narrow(-1, 0, masked[b]).fill_(std::numeric_limits<float>::lowest());
  return bias;
}

struct Shape {
  int64_t B, H, KV, D, S;
};

}  // namespace

TEST_CASE(
    "decode attention follows the exact path within its own distance from fp64, the same "
    "bits on every instruction-set path",
    "[models][cpu_attention]") {
  KernelSettings restore;
  torch::manual_seed(7);
  // SmolLM2's layer (9 heads on 3 kv heads, head size 64), one slot, heads not grouped, an odd
  // head size (no whole 16-value lane group), a wide head, a long cache.
  const std::vector<Shape> shapes{{1, 9, 3, 64, 160}, {3, 4, 4, 64, 1},   {2, 8, 2, 80, 33},
                                  {2, 6, 2, 17, 5},   {2, 4, 1, 128, 70}, {1, 2, 1, 64, 700}};
  for (const auto& shape : shapes) {
    for (auto dtype : {torch::kBFloat16, torch::kFloat32}) {
      for (bool masked : {false, true}) {
        INFO("B " << shape.B << " H " << shape.H << " KV " << shape.KV << " D " << shape.D << " S "
                  << shape.S << " " << c10::toString(dtype) << " masked " << masked);
        auto q = torch::randn({shape.B, shape.H, 1, shape.D}).to(dtype);
        // Keys scaled so that the softmax is far from uniform, as a trained model's is.
        auto k = (torch::randn({shape.B, shape.KV, shape.S, shape.D}) * 2).to(dtype);
        auto v = torch::randn({shape.B, shape.KV, shape.S, shape.D}).to(dtype);
        std::vector<int64_t> pad(size_t(shape.B), 0);
        for (int64_t b = 0; b < shape.B; ++b) pad[size_t(b)] = masked ? (b * 3) % shape.S : 0;
        const auto bias = masked ? padding_bias(pad, shape.S) : torch::Tensor();
        const int64_t groups = shape.H / shape.KV;
        const auto truth = exact_attention(q.to(torch::kFloat64), k.to(torch::kFloat64),
                                           v.to(torch::kFloat64), bias, groups);
        const auto aten = exact_attention(q, k, v, bias, groups).to(torch::kFloat64);
        const double aten_error = (aten - truth).abs().max().item<double>();
        torch::Tensor first;
        for (CpuIsa isa : runnable_paths()) {
          INFO("path " << models::cpu_isa_name(isa));
          models::force_cpu_isa(isa);
          const auto got = models::decode_attention_cpu(q, k, v, bias, groups);
          REQUIRE(got.sizes() == q.sizes());
          REQUIRE(got.scalar_type() == dtype);
          const double error = (got.to(torch::kFloat64) - truth).abs().max().item<double>();
          INFO("kernel " << error << ", ATen's exact path " << aten_error << " from fp64");
          // fp32: summation order alone; bf16: the roundings the exact path makes itself, which
          // land on the other side of a bf16 step now and then.
          CHECK(error <= 2 * aten_error + (dtype == torch::kFloat32 ? 1e-6 : 1e-3));
          if (!first.defined())
            first = got;
          else
            CHECK(torch::equal(got, first));
        }
      }
    }
  }
}

TEST_CASE("decode attention gives masked slots no weight, however large their values",
          "[models][cpu_attention]") {
  torch::manual_seed(3);
  auto q = torch::randn({1, 4, 1, 32});
  auto k = torch::randn({1, 2, 10, 32});
  auto v = torch::randn({1, 2, 10, 32});
  v.narrow(2, 0, 4).fill_(1e30f);  // the masked slots
  const auto bias = padding_bias({4}, 10);
  const auto got = models::decode_attention_cpu(q.to(torch::kBFloat16), k.to(torch::kBFloat16),
                                                v.to(torch::kBFloat16), bias, 2);
  const auto unmasked =
      models::decode_attention_cpu(q.to(torch::kBFloat16), k.narrow(2, 4, 6).to(torch::kBFloat16),
                                   v.narrow(2, 4, 6).to(torch::kBFloat16), torch::Tensor(), 2);
  CHECK(torch::equal(got, unmasked));
}

TEST_CASE("decode attention takes the cache's slots in place and refuses what it cannot attend",
          "[models][cpu_attention][errors]") {
  torch::manual_seed(5);
  // A cache of 12 slots of which 7 are filled: the narrowed view, not a copy.
  auto cache_k = torch::randn({2, 3, 12, 64}).to(torch::kBFloat16);
  auto cache_v = torch::randn({2, 3, 12, 64}).to(torch::kBFloat16);
  auto q = torch::randn({2, 6, 1, 64}).to(torch::kBFloat16);
  const auto k = cache_k.narrow(2, 0, 7), v = cache_v.narrow(2, 0, 7);
  CHECK(torch::equal(
      models::decode_attention_cpu(q, k, v, torch::Tensor(), 2),
      models::decode_attention_cpu(q, k.contiguous(), v.contiguous(), torch::Tensor(), 2)));
  CHECK_THROWS_AS(models::decode_attention_cpu(q, k, v, torch::Tensor(), 3), Error);
  CHECK_THROWS_AS(models::decode_attention_cpu(torch::randn({2, 6, 2, 64}).to(torch::kBFloat16), k,
                                               v, torch::Tensor(), 2),
                  Error);
  CHECK_THROWS_AS(models::decode_attention_cpu(q, k.to(torch::kFloat32), v, torch::Tensor(), 2),
                  Error);
  CHECK_THROWS_AS(models::decode_attention_cpu(q, k, v, torch::zeros({2, 1, 1, 8}), 2), Error);
  CHECK_THROWS_AS(models::decode_attention_cpu(q.to(torch::kHalf), k.to(torch::kHalf),
                                               v.to(torch::kHalf), torch::Tensor(), 2),
                  Error);
}

TEST_CASE(
    "decode attention applies to an fp32 or bf16 decoding step on the CPU that needs no "
    "gradient",
    "[models][cpu_attention]") {
  KernelSettings restore;
  auto q = torch::randn({1, 9, 1, 64}).to(torch::kBFloat16);
  auto k = torch::randn({1, 3, 20, 64}).to(torch::kBFloat16);
  CHECK(models::decode_attention_applies(q, k, 1, false));
  CHECK_FALSE(models::decode_attention_applies(q, k, 2, false));  // a prompt's pass
  CHECK_FALSE(models::decode_attention_applies(q, k, 1, true));   // attention read
  CHECK(models::decode_attention_applies(q.to(torch::kFloat32), k.to(torch::kFloat32), 1, false));
  CHECK_FALSE(models::decode_attention_applies(q.to(torch::kHalf), k.to(torch::kHalf), 1, false));
  auto trained = q.clone().requires_grad_(true);
  CHECK_FALSE(models::decode_attention_applies(trained, k, 1, false));
  {
    torch::NoGradGuard no_grad;
    CHECK(models::decode_attention_applies(trained, k, 1, false));
  }
  models::set_fused_decoding(false);
  CHECK_FALSE(models::decode_attention_applies(q, k, 1, false));
}
