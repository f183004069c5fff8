// The CPU decoding kernels (models/cpu_matvec.*) checked as llm.c checks a kernel: against the
// dequantise-then-matmul reference on random shapes, within a bound derived from the two
// roundings the kernel makes, and every instruction-set path this CPU runs against the others.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>

#include "common/error.h"
#include "models/cpu_matvec.h"
#include "models/fused_matmul.h"
#include "models/linear.h"
#include "tests/models/cpu_kernel_paths.h"

using namespace citeforge;
using models::CpuIsa;
using testing::KernelSettings;
using testing::runnable_paths;

namespace {

// |kernel - reference| allowed per output, in fp64: the activations are rounded to 1/8191 of
// their block's largest value (error at most half of that) and the weights by at most
// `weight_rounding` per block ([out, blocks]: 2^-15 times the block absmax for the NF4 levels,
// 0 against a Q16 copy's own dequantised weight), so the error of output o is at most
//   sum_b (0.5 / 8191) max|x_b| sum|w_ob| + weight_rounding_ob sum|x_b|,
// plus fp32 summation noise, which 1e-5 of sum|w||x| covers.
torch::Tensor error_bound(const torch::Tensor& x, const torch::Tensor& w,
                          const torch::Tensor& weight_rounding) {
  const int64_t blocks = x.size(-1) / 64;
  auto xb = x.reshape({-1, blocks, 64}).abs();         // [rows, blocks, 64]
  auto wb = w.reshape({w.size(0), blocks, 64}).abs();  // [out, blocks, 64]
  auto x_max = std::get<0>(xb.max(2));                 // [rows, blocks]
  auto w_sum = wb.sum(2);                              // [out, blocks]
  auto activation = torch::matmul(x_max * (0.5 / 8191), w_sum.t());
  auto weights = torch::matmul(xb.sum(2), weight_rounding.t());
  auto noise = torch::matmul(x.reshape({-1, x.size(-1)}).abs(), w.abs().t()) * 1e-5;
  return activation + weights + noise + 1e-6;
}

// `matvec` on every path this CPU runs: each result within `bound` of `reference`, and all of
// them the same bits (integer sums and one shared fp32 order).
void check_every_path(const std::function<torch::Tensor()>& matvec, const torch::Tensor& reference,
                      const torch::Tensor& bound) {
  torch::Tensor first;
  for (CpuIsa isa : runnable_paths()) {
    INFO("path " << models::cpu_isa_name(isa));
    models::force_cpu_isa(isa);
    const torch::Tensor y = matvec();
    REQUIRE(y.sizes() == reference.sizes());
    CHECK(((y.to(torch::kFloat64) - reference).abs() - bound).max().item<double>() <= 0);
    if (!first.defined())
      first = y;
    else
      CHECK(torch::equal(y, first));
  }
}

}  // namespace

TEST_CASE(
    "the NF4 decoding kernel equals dequantise-then-matmul within its rounding bound, "
    "on odd shapes and every block boundary",
    "[models][cpu_matvec]") {
  KernelSettings restore;
  torch::manual_seed(11);
  for (int64_t out : {1, 3, 17, 130}) {
    for (int64_t in : {64, 128, 576, 704}) {
      // Pairs of rows and an odd one (AVX-512), and more than one call's 8 rows (9, 32).
      for (int64_t rows : {1, 2, 3, 5, 8, 9, 32}) {
        INFO("out " << out << " in " << in << " rows " << rows);
        auto dense = torch::randn({out, in}) * 0.05;
        dense.index_put_({0, torch::indexing::Slice(0, 64)}, 0.0);  // an all-zero block
        auto q = models::nf4_quantize(dense);
        auto w = models::nf4_dequantize_reference(q);
        auto block_absmax = w.reshape({out, in / 64, 64}).abs().amax(2);
        auto x = torch::randn({rows, in});
        x.index_put_({0, torch::indexing::Slice(64, std::min<int64_t>(in, 128))}, 0.0);
        auto reference = torch::matmul(x.to(torch::kFloat64), w.to(torch::kFloat64).t());
        auto bound = error_bound(x.to(torch::kFloat64), w.to(torch::kFloat64),
                                 block_absmax.to(torch::kFloat64) * std::pow(2.0, -15));
        check_every_path([&] { return models::nf4_matvec_cpu(x, q); }, reference, bound);
      }
    }
  }
}

TEST_CASE(
    "several NF4 weights of one input in one kernel call give each weight's own call's bits, "
    "in fp32 and bf16, on every path",
    "[models][cpu_matvec]") {
  KernelSettings restore;
  torch::manual_seed(13);
  // Output rows that split the parallel loop's range inside a weight and across two, and an odd
  // count; rows past one call's 8.
  std::vector<models::Nf4Weight> weights;
  for (int64_t out : {192, 64, 3, 130})
    weights.push_back(models::nf4_quantize(torch::randn({out, 576}) * 0.05));
  std::vector<const models::Nf4Weight*> pointers;
  for (const auto& w : weights) pointers.push_back(&w);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16})
    for (int64_t rows : {1, 3, 11}) {
      INFO("dtype " << dtype << " rows " << rows);
      auto x = torch::randn({rows, 1, 576}).to(dtype);
      for (CpuIsa isa : runnable_paths()) {
        INFO("path " << models::cpu_isa_name(isa));
        models::force_cpu_isa(isa);
        const auto together = models::nf4_matvec_cpu(x, pointers);
        REQUIRE(together.size() == weights.size());
        for (size_t i = 0; i < weights.size(); ++i) {
          INFO("weight " << i);
          const auto alone = models::nf4_matvec_cpu(x, weights[i]);
          CHECK(together[i].sizes() == alone.sizes());
          CHECK(together[i].scalar_type() == dtype);
          CHECK(torch::equal(together[i], alone));
        }
      }
    }
  // Weights of different inputs are refused with the error, not read out of bounds.
  auto other = models::nf4_quantize(torch::randn({64, 128}));
  CHECK_THROWS_AS(models::nf4_matvec_cpu(torch::randn({1, 576}), {&weights[0], &other}), Error);
  CHECK_FALSE(models::fused_nf4_linears(torch::randn({1, 576}), {&weights[0], &other}).has_value());
}

TEST_CASE(
    "the Q16 output-layer kernel equals its own dequantised matmul and stays near the "
    "dense layer",
    "[models][cpu_matvec]") {
  KernelSettings restore;
  torch::manual_seed(12);
  auto dense = torch::randn({300, 192}) * 0.1;
  auto q = models::q16_quantize(dense);
  auto w = models::q16_dequantize(q).to(torch::kFloat64);
  CHECK((w - dense.to(torch::kFloat64)).abs().max().item<double>() <=
        0.5 * q.scales.max().item<double>() + 1e-9);
  for (int64_t rows : {3, 12}) {
    INFO("rows " << rows);
    auto x = torch::randn({rows, 192});
    auto reference = torch::matmul(x.to(torch::kFloat64), w.t());
    auto bound = error_bound(x.to(torch::kFloat64), w, torch::zeros({300, 3}, torch::kFloat64));
    check_every_path([&] { return models::q16_matvec_cpu(x, q); }, reference, bound);
  }
}

namespace {

// A weight as a GGUF's Q8_0 block stores it, dequantised: per block of 32 an fp16 scale d times
// int8 codes, the block's largest magnitude at +-127 (as ggml rounds it).
torch::Tensor q8_0_weight(int64_t out, int64_t in) {
  auto d = (torch::rand({out, in / 32, 1}) * 0.01 + 1e-4).to(torch::kHalf).to(torch::kFloat32);
  auto q = torch::randint(-127, 128, {out, in / 32, 32}).to(torch::kFloat32);
  q.select(2, 5).fill_(-127);
  return (q * d).reshape({out, in});
}

}  // namespace

TEST_CASE(
    "the Q8 output-layer copy is made only where it is exact and equals its matmul within the "
    "activations' rounding on every path",
    "[models][cpu_matvec]") {
  KernelSettings restore;
  torch::manual_seed(15);
  for (int64_t in : {64, 192, 576}) {
    auto dense = q8_0_weight(70, in);
    dense.index_put_({3, torch::indexing::Slice(32, 64)}, 0.0);  // an all-zero block
    auto q = models::q8_exact_quantize(dense);
    REQUIRE(q.has_value());
    CHECK(q->codes.scalar_type() == torch::kInt8);
    CHECK(q->bytes() == 70 * in + 70 * (in / 32) * 4);
    CHECK(torch::equal(models::q8_dequantize(*q), dense));
    auto w = dense.to(torch::kFloat64);
    for (int64_t rows : {1, 2, 3, 8, 9}) {
      INFO("in " << in << " rows " << rows);
      auto x = torch::randn({rows, in});
      auto reference = torch::matmul(x.to(torch::kFloat64), w.t());
      auto bound =
          error_bound(x.to(torch::kFloat64), w, torch::zeros({70, in / 64}, torch::kFloat64));
      check_every_path([&] { return models::q8_matvec_cpu(x, *q); }, reference, bound);
    }
  }
  // Weights that are not 8-bit blocks keep the 16-bit copy: trained values, and one code off a
  // Q8_0 grid by a little more than the Q16 copy's rounding.
  CHECK_FALSE(models::q8_exact_quantize(torch::randn({8, 64})).has_value());
  auto nudged = q8_0_weight(4, 64);
  const double block_max = nudged[1].narrow(0, 0, 32).abs().max().item<double>();
  nudged[1][7] = nudged[1][7].item<float>() + float(block_max * 2e-5);
  CHECK_FALSE(models::q8_exact_quantize(nudged).has_value());
  auto bad = q8_0_weight(4, 64);
  bad[0][0] = std::numeric_limits<float>::quiet_NaN();
  CHECK_FALSE(models::q8_exact_quantize(bad).has_value());
  CHECK_THROWS_AS(models::q8_exact_quantize(torch::randn({4, 100})), Error);

  // A bf16 weight rounded from 8-bit blocks gets a copy whose every value rounds back to it: it
  // lies within half a bf16 step of the stored value (the midpoints to its neighbours, counted
  // here in double, where code times scale is exact). A bf16 weight of other values, or one value
  // moved half a code off its block's grid, gets none.
  for (int64_t in : {64, 576}) {
    INFO("bf16, in " << in);
    auto rounded = q8_0_weight(50, in).to(torch::kBFloat16);
    auto q = models::q8_exact_quantize(rounded);
    REQUIRE(q.has_value());
    auto values = (q->codes.to(torch::kFloat64).reshape({50, in / 32, 32}) *
                   q->scales.to(torch::kFloat64).unsqueeze(2))
                      .reshape({50, in});
    auto w = rounded.to(torch::kFloat64);
    auto bits = rounded.abs().view(torch::kInt16);
    auto up = (bits + 1).view(torch::kBFloat16).to(torch::kFloat64) - w.abs();
    auto down = w.abs() - (bits - 1).clamp_min(0).view(torch::kBFloat16).to(torch::kFloat64);
    auto excess = values.abs() - w.abs();
    CHECK((excess <= up / 2).all().item<bool>());
    CHECK((-excess <= down / 2).all().item<bool>());
    CHECK((values * w >= 0).all().item<bool>());
    auto x = torch::randn({3, in});
    auto reference = torch::matmul(x.to(torch::kFloat64), w.t());
    auto bound =
        error_bound(x.to(torch::kFloat64), w, torch::zeros({50, in / 64}, torch::kFloat64)) +
        torch::matmul(x.to(torch::kFloat64).abs(), w.abs().t()) * std::ldexp(1.0, -8);
    check_every_path([&] { return models::q8_matvec_cpu(x, *q); }, reference, bound);
  }
  CHECK_FALSE(models::q8_exact_quantize(torch::randn({8, 64}).to(torch::kBFloat16)).has_value());
  auto off_grid = q8_0_weight(4, 64);
  const float step = off_grid[2].narrow(0, 0, 32).abs().max().item<float>() / 127;
  off_grid[2][9] = 3.5f * step;  // halfway between codes 3 and 4 of its block
  CHECK_FALSE(models::q8_exact_quantize(off_grid.to(torch::kBFloat16)).has_value());

  // The output layer takes the 8-bit copy where it is exact and the 16-bit one otherwise.
  torch::NoGradGuard no_grad;
  auto x = torch::randn({2, 64});
  models::DecodingHead head;
  auto exact = q8_0_weight(40, 64);
  auto y = models::fused_output_layer(x, exact, head);
  REQUIRE(y.has_value());
  CHECK(head.q8.has_value());
  CHECK(head.bytes() == head.q8->bytes());
  CHECK(torch::equal(*y, models::q8_matvec_cpu(x, *head.q8)));
  models::DecodingHead trained_head;
  auto trained = torch::randn({40, 64});
  y = models::fused_output_layer(x, trained, trained_head);
  REQUIRE(y.has_value());
  CHECK_FALSE(trained_head.q8.has_value());
  CHECK(torch::equal(*y, models::q16_matvec_cpu(x, models::q16_quantize(trained))));
  models::DecodingHead bf16_head;
  y = models::fused_output_layer(x.to(torch::kBFloat16), exact.to(torch::kBFloat16), bf16_head);
  REQUIRE(y.has_value());
  CHECK(bf16_head.q8.has_value());
}

TEST_CASE(
    "the decoding kernels take bf16 activations, give NaN for non-finite ones and refuse "
    "what they cannot read",
    "[models][cpu_matvec]") {
  KernelSettings restore;
  torch::manual_seed(13);
  auto q = models::nf4_quantize(torch::randn({40, 128}));
  auto x = torch::randn({2, 128});
  auto y32 = models::nf4_matvec_cpu(x, q);
  auto y16 = models::nf4_matvec_cpu(x.to(torch::kBFloat16), q);
  CHECK(y16.scalar_type() == torch::kBFloat16);
  auto x16 = x.to(torch::kBFloat16).to(torch::kFloat32);
  CHECK(torch::allclose(y16.to(torch::kFloat32),
                        models::nf4_matvec_cpu(x16, q).to(torch::kBFloat16).to(torch::kFloat32)));
  CHECK((y16.to(torch::kFloat32) - y32).abs().max().item<double>() <
        0.02 * y32.abs().max().item<double>());

  auto bad = x.clone();
  bad[0][70] = std::numeric_limits<float>::infinity();
  bad[1][3] = std::numeric_limits<float>::quiet_NaN();
  auto y_bad = models::nf4_matvec_cpu(bad, q);
  CHECK(y_bad.isnan().all().item<bool>());
  // A finite row beside a non-finite one (the two halves of one AVX-512 register) keeps its own
  // result.
  auto mixed = torch::cat({bad[0].unsqueeze(0), x[1].unsqueeze(0)});
  CHECK(torch::equal(models::nf4_matvec_cpu(mixed, q)[1], y32[1]));

  auto ragged = models::nf4_quantize(torch::randn({4, 100}));
  CHECK_FALSE(models::cpu_matvec_supports(ragged));
  CHECK_THROWS_AS(models::nf4_matvec_cpu(torch::randn({1, 100}), ragged), Error);
  CHECK_THROWS_AS(models::nf4_matvec_cpu(torch::randn({1, 64}), q), Error);
  CHECK_THROWS_AS(models::q16_quantize(torch::randn({4, 100})), Error);
  if (models::detected_cpu_isa() != CpuIsa::avx512)
    CHECK_THROWS_AS(models::force_cpu_isa(CpuIsa::avx512), Error);
  models::force_cpu_isa(CpuIsa::portable);
  CHECK(models::active_cpu_isa() == CpuIsa::portable);
  models::force_cpu_isa(std::nullopt);
  CHECK(models::active_cpu_isa() == models::detected_cpu_isa());
}

TEST_CASE(
    "an NF4 linear layer decodes a few rows with the kernel and keeps the dense path for "
    "prefill, gradients and ragged blocks",
    "[models][cpu_matvec][linear]") {
  KernelSettings restore;
  torch::manual_seed(14);
  models::Linear layer(128, 24, true, /*with_bias=*/true);
  torch::nn::init::normal_(layer->bias);
  layer->quantize_nf4();
  layer->add_lora({4, 8, 0});
  torch::nn::init::normal_(layer->lora_B);
  torch::NoGradGuard no_grad;
  const auto bias = layer->bias;
  auto lora = [&](const torch::Tensor& x) {
    return torch::linear(torch::linear(x, layer->lora_A), layer->lora_B) * layer->lora_scale;
  };
  auto few = torch::randn({1, models::fused_max_rows(torch::kFloat32), 128});
  auto expected = models::nf4_matvec_cpu(few, *layer->nf4) + bias + lora(few);
  CHECK(torch::allclose(layer(few), expected, 1e-5, 1e-6));

  auto many = torch::randn({1, models::fused_max_rows(torch::kFloat32) + 1, 128});
  auto dense = torch::linear(many, models::nf4_dequantize(*layer->nf4), bias) + lora(many);
  CHECK(torch::allclose(layer(many), dense, 1e-5, 1e-6));

  models::set_fused_decoding(false);
  auto off = torch::linear(few, models::nf4_dequantize(*layer->nf4), bias) + lora(few);
  // Without the kernels these 32 rows are enough for the adapter to be folded into the weight
  // (models/linear.cpp), which sums in another order: equal up to fp32 rounding of the largest.
  CHECK((layer(few) - off).abs().max().item<double>() < 1e-5 * off.abs().max().item<double>());
  CHECK_FALSE(torch::equal(layer(few), expected));
  models::set_fused_decoding(true);

  {
    torch::AutoGradMode grad(true);
    auto x = torch::randn({1, 2, 128}, torch::requires_grad());
    CHECK_FALSE(models::use_fused_kernel(x));
    auto y = layer(x);
    y.sum().backward();
    CHECK(x.grad().defined());
  }

  models::Linear ragged(100, 8);
  ragged->quantize_nf4();
  auto x = torch::randn({1, 1, 100});
  CHECK_FALSE(models::fused_nf4_linear(x, *ragged->nf4).has_value());
  CHECK(torch::allclose(ragged(x), torch::linear(x, models::nf4_dequantize(*ragged->nf4)), 1e-5,
                        1e-6));
}

TEST_CASE(
    "layers of one input (q, k and v, or gate and up) give each layer's own forward, with their "
    "NF4 bases in one kernel call at a decoding step",
    "[models][cpu_matvec][linear]") {
  KernelSettings restore;
  torch::manual_seed(16);
  // One with a bias, two with adapters (one of them the reference adapter in use), one without.
  models::Linear q(128, 192, true, /*with_bias=*/true), k(128, 64), v(128, 64);
  torch::nn::init::normal_(q->bias);
  for (auto* layer : {q.get(), k.get(), v.get()}) layer->quantize_nf4();
  q->add_lora({4, 8, 0});
  k->add_lora({4, 8, 0});
  torch::nn::init::normal_(q->lora_B);
  k->reference_A = torch::randn({4, 128});
  k->reference_B = torch::randn({64, 4});
  k->use_reference = true;
  torch::NoGradGuard no_grad;
  const std::vector<models::LinearImpl*> layers{q.get(), k.get(), v.get()};
  auto check_each = [&](const torch::Tensor& x) {
    const auto together = models::linears_of_one_input(x, layers);
    REQUIRE(together.size() == layers.size());
    for (size_t i = 0; i < layers.size(); ++i) {
      INFO("layer " << i);
      CHECK(torch::equal(together[i], layers[i]->forward(x)));
    }
  };
  for (int64_t rows : {int64_t(1), int64_t(5), models::fused_max_rows(torch::kFloat32) + 1}) {
    INFO("rows " << rows);
    check_each(torch::randn({1, rows, 128}));
  }
  check_each(torch::randn({2, 3, 128}).to(torch::kBFloat16));
  // The decoding kernel computes them (not the dense path): the bits of the kernel's call.
  auto x = torch::randn({1, 1, 128});
  CHECK(
      torch::equal(models::linears_of_one_input(x, layers)[2], models::nf4_matvec_cpu(x, *v->nf4)));
  models::set_fused_decoding(false);
  check_each(x);
  models::set_fused_decoding(true);
  // A dense base among them: every layer its own forward.
  models::Linear dense(128, 64);
  check_each(x);
  const auto mixed = models::linears_of_one_input(x, {q.get(), dense.get()});
  CHECK(torch::equal(mixed[1], dense->forward(x)));
}

TEST_CASE("the kernels take up to 32 rows of fp32 activations and 8 of bf16, and no other dtype",
          "[models][cpu_matvec]") {
  KernelSettings restore;
  auto rows = [](int64_t n, torch::Dtype dtype) {
    const bool taken = models::use_fused_kernel(torch::zeros({1, n, 64}, dtype));
    // The rule benchmarks count bytes by is the one the layers follow.
    CHECK(models::fused_kernel_applies(n, dtype) == taken);
    return taken;
  };
  CHECK(rows(32, torch::kFloat32));
  CHECK_FALSE(rows(33, torch::kFloat32));
  CHECK(rows(8, torch::kBFloat16));
  CHECK_FALSE(rows(9, torch::kBFloat16));
  CHECK_FALSE(rows(1, torch::kHalf));
  CHECK_FALSE(rows(1, torch::kFloat64));
  models::set_fused_decoding(false);
  CHECK_FALSE(rows(1, torch::kFloat32));
}

TEST_CASE("the decoding kernels' parallel loop runs on every intra-op thread",
          "[models][cpu_matvec]") {
  // ATen's parallel_for is compiled into its caller: built without -fopenmp it runs on one thread
  // whatever torch::set_num_threads says, and decoding on a 2-core machine lost half its speed.
  const int before = torch::get_num_threads();
  torch::set_num_threads(2);
  CHECK(models::cpu_kernel_threads() == 2);
  torch::set_num_threads(1);
  CHECK(models::cpu_kernel_threads() == 1);
  torch::set_num_threads(before);
}
