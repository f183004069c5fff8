#include "models/model_tensors.h"

#include <algorithm>
#include <cstdio>

#include "common/error.h"

namespace citeforge::models {
namespace {

using Shapes = std::map<std::string, std::vector<int64_t>>;

// The parameters of decoder block `i`, with their shapes.
void add_layer_shapes(const ModelConfig& c, int64_t i, Shapes& shapes) {
  const int64_t H = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim,
                I = c.intermediate_size;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  shapes[p + "input_layernorm.weight"] = {H};
  shapes[p + "post_attention_layernorm.weight"] = {H};
  shapes[p + "self_attn.q_proj.weight"] = {q, H};
  shapes[p + "self_attn.k_proj.weight"] = {kv, H};
  shapes[p + "self_attn.v_proj.weight"] = {kv, H};
  shapes[p + "self_attn.o_proj.weight"] = {H, q};
  shapes[p + "mlp.gate_proj.weight"] = {I, H};
  shapes[p + "mlp.up_proj.weight"] = {I, H};
  shapes[p + "mlp.down_proj.weight"] = {H, I};
  if (c.qkv_bias) {
    shapes[p + "self_attn.q_proj.bias"] = {q};
    shapes[p + "self_attn.k_proj.bias"] = {kv};
    shapes[p + "self_attn.v_proj.bias"] = {kv};
  }
  if (c.o_bias) shapes[p + "self_attn.o_proj.bias"] = {H};
  if (c.qk_norm) {
    shapes[p + "self_attn.q_norm.weight"] = {c.head_dim};
    shapes[p + "self_attn.k_norm.weight"] = {c.head_dim};
  }
}

int64_t tensors_per_layer(const ModelConfig& c) {
  Shapes one;
  add_layer_shapes(c, 0, one);
  return int64_t(one.size());
}

}  // namespace

std::string shape_text(torch::IntArrayRef shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string unexpected_tensor_reason(const ModelConfig& c, const std::string& name) {
  return c.tie_word_embeddings && name == "lm_head.weight"
             ? "unexpected: the config ties the LM head to the embeddings"
             : "unexpected tensor (not a parameter of " + c.architecture + ")";
}

std::map<std::string, std::vector<int64_t>> expected_tensor_shapes(const ModelConfig& c) {
  const int64_t H = c.hidden_size;
  Shapes shapes{{"model.embed_tokens.weight", {c.vocab_size, H}}, {"model.norm.weight", {H}}};
  if (!c.tie_word_embeddings) shapes["lm_head.weight"] = {c.vocab_size, H};
  for (int64_t i = 0; i < c.num_layers; ++i) add_layer_shapes(c, i, shapes);
  return shapes;
}

void check_model_tensors(const ModelConfig& c,
                         const std::map<std::string, std::vector<int64_t>>& present,
                         const std::string& location, bool (*ignorable)(const std::string&),
                         const std::string& layer_field) {
  const int64_t most_layers = int64_t(present.size()) / tensors_per_layer(c);
  if (c.num_layers > most_layers)
    fail_at(location, layer_field,
            "the config says " + std::to_string(c.num_layers) + " layers, but the file holds " +
                std::to_string(present.size()) + " tensors, too few for more than " +
                std::to_string(most_layers));
  const auto expected = expected_tensor_shapes(c);
  for (const auto& [name, shape] : expected) {
    auto it = present.find(name);
    if (it == present.end())
      fail_at(location, "tensor '" + name + "'", "missing (the config implies it)");
    if (it->second != shape)
      fail_at(
          location, "tensor '" + name + "'",
          "shape " + shape_text(it->second) + " does not match the config's " + shape_text(shape));
  }
  for (const auto& [name, shape] : present)
    if (!expected.count(name) && !(ignorable && ignorable(name)))
      fail_at(location, "tensor '" + name + "'", unexpected_tensor_reason(c, name));
}

int64_t count_non_finite(const torch::Tensor& t) {
  if (!t.is_floating_point()) return 0;
  const torch::Tensor flat = t.reshape({-1});
  constexpr int64_t kSlice = int64_t{1} << 24;
  int64_t bad = 0;
  for (int64_t begin = 0; begin < flat.numel(); begin += kSlice) {
    const auto slice = flat.slice(0, begin, std::min(begin + kSlice, flat.numel()));
    bad += torch::isfinite(slice).logical_not().sum().item<int64_t>();
  }
  return bad;
}

void report_non_finite(const std::string& location, const std::string& name, int64_t bad,
                       int64_t count, NonFiniteWeights policy) {
  if (bad == 0) return;
  const std::string what =
      std::to_string(bad) + " of its " + std::to_string(count) + " values are NaN or infinite";
  if (policy == NonFiniteWeights::error) fail_at(location, "tensor '" + name + "'", what);
  std::fprintf(stderr, "warning: %s: tensor '%s': %s (loaded anyway: non-finite weights warn)\n",
               location.c_str(), name.c_str(), what.c_str());
}

void check_finite(const std::string& location, const std::string& name, const torch::Tensor& t,
                  NonFiniteWeights policy) {
  report_non_finite(location, name, count_non_finite(t), t.numel(), policy);
}

}  // namespace citeforge::models
