// The linear layer every projection of the decoder uses: a frozen base, dense ("weight",
// [out, in], HF's name) or NF4-quantised, an optional frozen bias ("bias", kept dense: Qwen2's
// q/k/v projections have one), plus an optional LoRA adapter (QLoRA):
//   y = x W^T + b + (alpha / r) * dropout(x) A^T B^T,   A [r, in] Kaiming-uniform, B [out, r] 0.
// Switching the adapter off gives the base model's output, which is the frozen reference
// policy PPO needs without a second copy of the base.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <vector>

#include "models/nf4.h"

namespace citeforge::models {

struct LoraSpec {
  int64_t r = 8;
  double alpha = 16;
  double dropout = 0.0;
};

struct LinearImpl : torch::nn::Module {
  // `allocate = false` leaves the dense weight undefined (shape only), for loaders that quantise
  // a checkpoint tensor by tensor without ever holding the whole model dense.
  LinearImpl(int64_t in_features, int64_t out_features, bool allocate = true,
             bool with_bias = false);
  torch::Tensor forward(const torch::Tensor& x);
  // forward(x) given the NF4 base's fused product of x (fused_nf4_linear's), which the caller
  // made along with other layers' (linears_of_one_input).
  torch::Tensor forward_with_fused_base(const torch::Tensor& x, torch::Tensor fused_base);

  // The base weight as a dense tensor of `dtype` (dequantised when NF4).
  torch::Tensor base_weight(torch::Dtype dtype) const;
  // Replaces the dense base by its NF4 codes (the "weight" parameter goes away).
  void quantize_nf4(int64_t blocksize = 64);
  // Sets an NF4 base directly (quantised elsewhere, e.g. while loading).
  void set_nf4(Nf4Weight weight);
  bool is_nf4() const { return nf4.has_value(); }

  // Adds trainable lora_A / lora_B parameters (registered under those names). The base is
  // frozen by the caller (see attach_lora in models/lora.h).
  void add_lora(const LoraSpec& spec);
  bool has_lora() const { return lora_A.defined(); }
  // Folds an enabled adapter into a dense base weight (dequantising an NF4 base) and removes
  // the adapter parameters. No-op without an adapter.
  void merge_lora();

  int64_t in_features, out_features;
  torch::Tensor weight;  // dense base; undefined when NF4 or not allocated
  torch::Tensor bias;    // [out]; undefined when the layer has none
  std::optional<Nf4Weight> nf4;
  torch::Tensor lora_A, lora_B;
  double lora_scale = 0, lora_dropout = 0;
  bool adapter_enabled = true;
  // A frozen copy of an earlier state of the adapter (e.g. the SFT adapter PPO continues from):
  // with use_reference set, forward applies it instead of the trained adapter (or nothing when
  // there is none), which gives PPO's reference policy without a second copy of the base.
  torch::Tensor reference_A, reference_B;
  bool use_reference = false;
  // The dequantised NF4 base (or the dense base in another dtype) kept while a
  // DequantizedWeights scope is active (see below), and the dense weight's version it copies
  // (0 for NF4 codes, which never change in place).
  mutable torch::Tensor dense_cache;
  mutable int64_t dense_cache_version = 0;
};
TORCH_MODULE(Linear);

// Each layer's forward(x), for layers that share their input (an attention's q, k and v, an
// MLP's gate and up): where the fused kernel takes x and every base is NF4, the bases' products
// come from one kernel call (x rounded once, one fork and join), then each layer adds its own
// bias and adapter. The same bits as calling each layer.
std::vector<torch::Tensor> linears_of_one_input(const torch::Tensor& x,
                                                const std::vector<LinearImpl*>& layers);

// While one of these is alive on a thread, every NF4 layer dequantises its frozen base once and
// reuses it in every forward and backward pass, instead of once per matmul. On a CPU the
// dequantisation would otherwise cost as much as the matmuls (decoding runs one forward pass per
// token; an SFT step dequantises each weight in the forward and again in the backward pass).
// The dense copies (the compute dtype's bytes a weight) are dropped when the outermost scope
// ends. `enabled = false` makes it a no-op (on a GPU, where holding a 7B base dense would undo
// what NF4 saves).
class DequantizedWeights {
 public:
  explicit DequantizedWeights(bool enabled = true);
  ~DequantizedWeights();
  DequantizedWeights(const DequantizedWeights&) = delete;
  DequantizedWeights& operator=(const DequantizedWeights&) = delete;

 private:
  bool enabled_;
};

// Root-mean-square layer norm as HF computes it: statistics in fp32, scale in the input dtype.
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t size, double eps);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;
  double eps;
};
TORCH_MODULE(RMSNorm);

}  // namespace citeforge::models
