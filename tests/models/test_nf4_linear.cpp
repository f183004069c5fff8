// nf4_linear: the same values and input gradients as dequantise-then-linear, and a forward pass
// that leaves only the codes alive for the backward pass (the dense weight is freed at once).
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <catch2/catch.hpp>

#include "models/linear.h"
#include "models/nf4_linear.h"

using namespace citeforge;

namespace {

// Counts the bytes of CPU tensors alive, to see what a graph keeps for its backward pass.
struct CountingAllocator final : c10::Allocator {
  c10::Allocator* inner = nullptr;
  std::atomic<int64_t> live{0};

  struct Held {
    c10::DataPtr data;
    size_t bytes;
    CountingAllocator* owner;
  };
  static void release(void* ctx) {
    auto* held = static_cast<Held*>(ctx);
    held->owner->live -= static_cast<int64_t>(held->bytes);
    delete held;  // frees the inner allocation with it
  }
  c10::DataPtr allocate(size_t n) override {
    auto data = inner->allocate(n);
    void* raw = data.get();
    live += static_cast<int64_t>(n);
    return {raw, new Held{std::move(data), n, this}, &release, c10::Device(c10::kCPU)};
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

// Bytes still alive after a forward pass through `linear` on a fresh input requiring grad, with
// the output (and so its graph) kept; the input and weight codes are made before counting.
template <typename Linear>
int64_t bytes_kept_by_graph(const torch::Tensor& x, Linear linear) {
  static CountingAllocator counter;  // outlives every tensor it hands out
  counter.inner = c10::GetDefaultCPUAllocator();
  c10::SetCPUAllocator(&counter, /*priority=*/100);
  const int64_t before = counter.live;
  int64_t kept = 0;
  {
    auto y = linear(x);
    kept = counter.live - before - y.nbytes();
  }
  c10::SetCPUAllocator(counter.inner, /*priority=*/100);
  return kept;
}

}  // namespace

TEST_CASE("nf4_linear equals dequantise-then-linear, gradients included", "[models][nf4]") {
  torch::manual_seed(3);
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    CAPTURE(dtype);
    // 130 inputs: two whole 64-value blocks and a ragged one.
    const auto w = models::nf4_quantize(torch::randn({70, 130}));
    auto x = torch::randn({2, 3, 130}).to(dtype).requires_grad_();
    auto x_ref = x.detach().clone().requires_grad_();
    auto y = models::nf4_linear(x, w);
    auto y_ref = torch::linear(x_ref, models::nf4_dequantize(w, dtype));
    CHECK(y.scalar_type() == dtype);
    CHECK(torch::equal(y, y_ref));
    const auto grad = torch::randn_like(y);
    y.backward(grad);
    y_ref.backward(grad);
    CHECK(torch::equal(x.grad(), x_ref.grad()));
  }
}

TEST_CASE("nf4_linear's graph keeps the codes, not the dequantised weight", "[models][nf4]") {
  torch::manual_seed(4);
  const auto w = models::nf4_quantize(torch::randn({512, 1024}));
  const int64_t dense_bytes = 512 * 1024 * 4;
  auto x = torch::randn({4, 1024}).requires_grad_();
  const auto kept =
      bytes_kept_by_graph(x, [&](const torch::Tensor& in) { return models::nf4_linear(in, w); });
  const auto kept_dense = bytes_kept_by_graph(
      x, [&](const torch::Tensor& in) { return torch::linear(in, models::nf4_dequantize(w)); });
  CHECK(kept_dense >= dense_bytes);  // what torch::linear saves: the check can fail
  CHECK(kept < dense_bytes / 8);
}

TEST_CASE("an NF4 linear layer trains through nf4_linear outside a dequantised scope",
          "[models][nf4][lora]") {
  torch::manual_seed(5);
  models::Linear layer(96, 40);
  layer->add_lora({8, 16.0, 0.0});
  {
    torch::NoGradGuard no_grad;
    layer->lora_B.normal_();  // a non-zero update, so every gradient below is not trivial
  }
  layer->quantize_nf4();
  const auto x0 = torch::randn({3, 96});
  // Inside a DequantizedWeights scope the layer uses its dense copy and torch::linear (a CPU
  // run's path); outside it, nf4_linear (a GPU run's).
  auto run = [&](bool dense_copy) {
    const models::DequantizedWeights once(dense_copy);
    layer->zero_grad();
    auto x = x0.clone().requires_grad_();
    auto y = layer(x);
    y.square().sum().backward();
    return std::make_tuple(y.detach(), x.grad(), layer->lora_A.grad().clone(),
                           layer->lora_B.grad().clone());
  };
  const auto [y, gx, gA, gB] = run(false);
  const auto [y_ref, gx_ref, gA_ref, gB_ref] = run(true);
  CHECK(torch::equal(y, y_ref));
  CHECK(torch::equal(gx, gx_ref));
  CHECK(torch::equal(gA, gA_ref));
  CHECK(torch::equal(gB, gB_ref));
}
