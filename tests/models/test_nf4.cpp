// NF4 quantisation against bitsandbytes (fixtures from scripts/make_qlora_fixtures.py), its
// error bounds, ragged blocks, storage cost, the quantise-on-load path and the CUDA kernel.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/error.h"
#include "models/checkpoint_io.h"
#include "models/linear.h"
#include "models/nf4.h"
#include "models/nf4_decode.h"
#include "models/safetensors.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;

namespace {

const std::string kFixture = "tests/fixtures/nf4/nf4_reference.safetensors";

torch::Tensor from_array(const float* data, int64_t n) {
  return torch::from_blob(const_cast<float*>(data), {n}, torch::kFloat32).clone();
}

// The per-block absmax of `w` (blocks of 64 in row-major order, the last one ragged).
torch::Tensor true_absmax(const torch::Tensor& w, int64_t blocksize = 64) {
  auto flat = w.flatten().to(torch::kFloat32).abs();
  const int64_t n = flat.numel(), blocks = (n + blocksize - 1) / blocksize;
  return torch::constant_pad_nd(flat, {0, blocks * blocksize - n}, 0).view({blocks, -1}).amax(1);
}

}  // namespace

TEST_CASE("NF4 code tables are bitsandbytes' own", "[models][nf4][bnb]") {
  auto ref = models::open_safetensors(testing::source_path(kFixture));
  CHECK(torch::equal(from_array(models::nf4_codebook().data(), 16), ref.get("nf4_code")));
  CHECK(
      torch::equal(from_array(models::dynamic_map_signed().data(), 256), ref.get("dynamic_code")));
}

TEST_CASE("NF4 codes, absmax and dequantised values equal bitsandbytes'", "[models][nf4][bnb]") {
  auto ref = models::open_safetensors(testing::source_path(kFixture));
  for (const std::string c : {"square", "ragged", "many_blocks", "bf16"}) {
    INFO("case " << c);
    auto weight = ref.get(c + ".weight");
    auto q = models::nf4_quantize(weight);
    CHECK(q.shape == weight.sizes().vec());
    CHECK(torch::equal(q.absmax_codes, ref.get(c + ".absmax_codes")));
    CHECK(torch::allclose(q.absmax_scale, ref.get(c + ".absmax_scale"), 0, 0));
    CHECK(q.absmax_offset == ref.get(c + ".absmax_offset").item<float>());
    // An odd count leaves the low nibble of the last byte as padding; compare only real codes.
    auto packed = ref.get(c + ".packed");
    CHECK(packed.numel() == q.packed.numel());
    if (weight.numel() % 2) {
      const int64_t whole = weight.numel() / 2;
      CHECK(torch::equal(q.packed.narrow(0, 0, whole), packed.narrow(0, 0, whole)));
      CHECK((q.packed[whole].item<uint8_t>() >> 4) == (packed[whole].item<uint8_t>() >> 4));
    } else {
      CHECK(torch::equal(q.packed, packed));
    }
    // bitsandbytes dequantises into the weight's own dtype.
    auto dense = models::nf4_dequantize(q, weight.scalar_type()).to(torch::kFloat32);
    CHECK(dense.sizes() == weight.sizes());
    CHECK((dense - ref.get(c + ".dequantized")).abs().max().item<double>() == 0.0);
  }
}

TEST_CASE("NF4 round trip stays within the codebook's and the absmax code's error",
          "[models][nf4]") {
  torch::manual_seed(11);
  for (auto shape : {std::vector<int64_t>{128, 256}, {7, 9}, {1, 65}, {513, 130}}) {
    auto w = torch::randn(shape) * 0.05;
    auto q = models::nf4_quantize(w);
    auto back = models::nf4_dequantize(q);
    // The double-quantised absmax is off by at most half a gap of the dynamic map's top
    // decade (0.9 / 64 / 2 of the second-level scale).
    auto absmax = true_absmax(w);
    auto blocks = absmax.numel();
    auto levels = from_array(models::dynamic_map_signed().data(), 256);
    auto absmax_back = levels.index({q.absmax_codes.to(torch::kInt64)}) *
                           q.absmax_scale.repeat_interleave(256).narrow(0, 0, blocks) +
                       q.absmax_offset;
    auto scale2 = q.absmax_scale.repeat_interleave(256).narrow(0, 0, blocks);
    CHECK(((absmax_back - absmax).abs() <= scale2 * (0.9 / 64 / 2) + 1e-7).all().item<bool>());
    // Each value is off by at most half the widest NF4 gap (between -1 and -0.696) times its
    // block's absmax, plus the absmax error itself.
    const int64_t n = w.numel();
    auto per_value_absmax = absmax.repeat_interleave(64).narrow(0, 0, n);
    auto per_value_absmax_err = (absmax_back - absmax).abs().repeat_interleave(64).narrow(0, 0, n);
    auto err = (back.flatten() - w.flatten()).abs();
    CHECK((err <= per_value_absmax * 0.1520 + per_value_absmax_err + 1e-7).all().item<bool>());
    // Each block's largest value comes back (almost) exactly: it maps to the level 1 or -1.
    CHECK(back.sizes() == w.sizes());
  }
}

TEST_CASE("NF4 handles ragged blocks, all-zero blocks and bad input", "[models][nf4]") {
  auto w = torch::zeros({3, 50});
  w[2][49] = 0.5;  // the last, ragged block of 22 values holds the only non-zero
  auto q = models::nf4_quantize(w);
  CHECK(q.absmax_codes.numel() == 3);
  CHECK(q.packed.numel() == 75);
  auto back = models::nf4_dequantize(q);
  CHECK(back[0].abs().max().item<float>() == 0.0f);
  CHECK(back[2][49].item<float>() == Approx(0.5).epsilon(0.01));
  CHECK_THROWS_WITH(models::nf4_quantize(torch::empty({0})), Contains("empty"));
  CHECK_THROWS_WITH(models::nf4_quantize(torch::ones({4}, torch::kInt64)), Contains("floating"));
}

TEST_CASE("NF4 costs about 4.13 bits per parameter", "[models][nf4]") {
  auto w = torch::randn({1024, 4096});
  auto q = models::nf4_quantize(w);
  const double bits = double(q.bytes()) * 8.0 / double(w.numel());
  INFO("bits per parameter: " << bits);
  CHECK(bits == Approx(4.127).margin(0.002));
}

TEST_CASE("a linear layer over an NF4 base computes with the dequantised weight",
          "[models][nf4][linear]") {
  torch::manual_seed(3);
  models::Linear layer(48, 20);
  auto x = torch::randn({2, 5, 48});
  auto dense_y = layer(x);
  layer->quantize_nf4();
  CHECK(layer->is_nf4());
  CHECK_FALSE(layer->weight.defined());
  CHECK(layer->parameters().empty());  // the base is frozen codes, not a parameter
  auto y = layer(x);
  CHECK(torch::allclose(y, torch::linear(x, models::nf4_dequantize(*layer->nf4)), 1e-5, 1e-6));
  // Quantisation error is small relative to the output scale.
  CHECK((y - dense_y).abs().max().item<double>() < 0.15 * dense_y.abs().max().item<double>());
}

TEST_CASE("inside a DequantizedWeights scope an NF4 base is dequantised once for training too",
          "[models][nf4][linear]") {
  torch::manual_seed(4);
  models::Linear layer(48, 20);
  layer->quantize_nf4();
  layer->add_lora({4, 8.0, 0.0});
  torch::nn::init::normal_(layer->lora_B, 0.0, 0.1);
  auto x = torch::randn({3, 48}, torch::requires_grad());
  auto gradients = [&] {
    layer->zero_grad();
    x.mutable_grad() = torch::Tensor();
    auto y = layer(x);
    (y * y).sum().backward();
    return std::vector<torch::Tensor>{y.detach(), x.grad().clone(), layer->lora_A.grad().clone(),
                                      layer->lora_B.grad().clone()};
  };
  const auto plain = gradients();
  CHECK_FALSE(layer->dense_cache.defined());
  {
    const models::DequantizedWeights once;
    const auto cached = gradients();
    REQUIRE(layer->dense_cache.defined());
    const void* kept = layer->dense_cache.data_ptr();
    gradients();  // a second step reuses the same dense copy
    CHECK(layer->dense_cache.data_ptr() == kept);
    for (std::size_t i = 0; i < plain.size(); ++i) CHECK(torch::equal(cached[i], plain[i]));
  }
  CHECK_FALSE(layer->dense_cache.defined());  // dropped with the scope
  // A layer freed inside the scope is skipped when the scope ends, not touched.
  {
    const models::DequantizedWeights once;
    models::Linear doomed(8, 4);
    doomed->quantize_nf4();
    torch::NoGradGuard no_grad;
    doomed(torch::randn({1, 8}));
    doomed = models::Linear(nullptr);
  }
}

TEST_CASE("loading with nf4 quantises every block projection and keeps the rest dense",
          "[models][nf4][checkpoint]") {
  const auto dir = testing::source_path("tests/fixtures/models/mistral_sliding");
  auto dense = models::load_model(dir);
  models::LoadOptions options;
  options.nf4 = true;
  auto quantised = models::load_model(dir, options);
  int nf4_layers = 0;
  for (auto& item : quantised->named_modules("", false))
    if (auto linear = std::dynamic_pointer_cast<models::LinearImpl>(item.value())) {
      INFO(item.key());
      CHECK(linear->is_nf4() == (item.key() != "lm_head"));
      nf4_layers += linear->is_nf4();
      if (linear->is_nf4()) {
        auto reference =
            models::nf4_quantize(dense->named_parameters()[item.key() + ".weight"].detach());
        CHECK(torch::equal(linear->nf4->packed, reference.packed));
      }
    }
  CHECK(nf4_layers == 7 * dense->config.num_layers);
  // The quantised model is exactly the dense model with each projection replaced by its
  // dequantised NF4 weight.
  auto ids = torch::randint(0, dense->config.vocab_size, {1, 9});
  auto a = dense->forward(ids), b = quantised->forward(ids);
  {
    torch::NoGradGuard no_grad;
    for (auto& item : dense->named_modules("", false))
      if (auto linear = std::dynamic_pointer_cast<models::LinearImpl>(item.value()))
        if (item.key() != "lm_head")
          linear->weight.copy_(models::nf4_dequantize(models::nf4_quantize(linear->weight)));
  }
  CHECK(torch::allclose(dense->forward(ids), b, 1e-5, 1e-5));
  // NF4 perturbs the logits but keeps them near the dense model's.
  CHECK((a - b).abs().max().item<double>() < 0.5 * a.abs().max().item<double>());
  // A quantised model saves dequantised, in HF layout, and loads back as a dense model.
  auto out = testing::temp_dir("nf4-save") / "model";
  models::save_model(quantised, out.string());
  auto reloaded = models::load_model(out.string());
  CHECK(torch::allclose(reloaded->forward(ids), b, 1e-4, 1e-4));
}

TEST_CASE("the CUDA kernel's per-byte decode equals the reference path on the CPU",
          "[models][nf4]") {
  torch::manual_seed(6);
  // Odd sizes give a ragged last block and an unpaired last value; 70000 values make more than
  // one second-level absmax block.
  for (auto shape : {std::vector<int64_t>{33, 7}, {300, 70}, {70001}}) {
    auto q = models::nf4_quantize(torch::randn(shape) * 3);
    auto reference = models::nf4_dequantize_reference(q, torch::kFloat32).flatten();
    auto decoded = torch::empty({q.numel}, torch::kFloat32);
    const auto& nf4 = models::nf4_codebook();
    const auto& levels = models::dynamic_map_signed();
    float* out = decoded.data_ptr<float>();
    for (int64_t byte = 0; 2 * byte < q.numel; ++byte) {
      auto pair = models::nf4_decode_byte(
          byte, q.packed.data_ptr<uint8_t>(), q.absmax_codes.data_ptr<uint8_t>(),
          q.absmax_scale.data_ptr<float>(), q.absmax_offset, q.numel, q.blocksize,
          q.absmax_blocksize, nf4.data(), levels.data());
      out[2 * byte] = pair.first;
      CHECK(pair.second_valid == (2 * byte + 1 < q.numel));
      if (pair.second_valid) out[2 * byte + 1] = pair.second;
    }
    CHECK(torch::equal(decoded, reference));
  }
}

TEST_CASE("the CUDA dequantisation kernel equals the reference path", "[models][nf4][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device: the NF4 kernel is checked on a GPU machine (scripts/gpu_check.sh)");
    return;
  }
  torch::manual_seed(5);
  for (auto shape : {std::vector<int64_t>{4096, 4096}, {33, 7}, {300, 70}}) {
    auto q = models::nf4_to(models::nf4_quantize(torch::randn(shape)), torch::kCUDA);
    auto reference = models::nf4_dequantize_reference(q, torch::kFloat32);
    CHECK(torch::equal(models::nf4_dequantize(q, torch::kFloat32), reference));
    CHECK(
        torch::equal(models::nf4_dequantize(q, torch::kBFloat16), reference.to(torch::kBFloat16)));
  }
}
