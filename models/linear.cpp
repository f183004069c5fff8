#include "models/linear.h"

#include <cmath>

#include "common/error.h"
#include "models/fused_matmul.h"
#include "models/lora_rows.h"
#include "models/nf4_linear.h"
#include "models/rms_norm_loop.h"

namespace citeforge::models {

LinearImpl::LinearImpl(int64_t in, int64_t out, bool allocate, bool with_bias)
    : in_features(in), out_features(out) {
  // Allocated even for a quantising loader: it stays dense, and is loaded like a norm weight.
  if (with_bias) bias = register_parameter("bias", torch::zeros({out}));
  if (!allocate) return;
  weight = register_parameter("weight", torch::empty({out, in}));
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));  // torch.nn.Linear's default
}

namespace {
thread_local int dequantized_scopes = 0;
// Weak, so a model freed inside a scope (a run reloading its policy) is simply skipped.
thread_local std::vector<std::weak_ptr<const torch::nn::Module>> dequantized_layers;
}  // namespace

DequantizedWeights::DequantizedWeights(bool enabled) : enabled_(enabled) {
  if (enabled_) ++dequantized_scopes;
}

DequantizedWeights::~DequantizedWeights() {
  if (!enabled_ || --dequantized_scopes > 0) return;
  for (const auto& weak : dequantized_layers)
    if (auto layer = weak.lock())
      static_cast<const LinearImpl&>(*layer).dense_cache = torch::Tensor();
  dequantized_layers.clear();
}

torch::Tensor LinearImpl::base_weight(torch::Dtype dtype) const {
  if (!nf4) {
    if (!weight.defined()) throw Error("linear layer: base weight was never loaded");
    if (weight.scalar_type() == dtype) return weight;
  }
  auto convert = [&] { return nf4 ? nf4_dequantize(*nf4, dtype) : weight.to(dtype); };
  // Inside a scope, a frozen base (NF4 codes carry no gradient; a frozen bf16 head read in fp32
  // for fp32 logits) is converted once and the copy serves forward and backward passes alike;
  // a trained weight needs its gradient through the conversion. A layer not owned by a
  // shared_ptr cannot be tracked and converts every time.
  if (dequantized_scopes == 0 || (!nf4 && weight.requires_grad())) return convert();
  auto self = weak_from_this();
  if (self.expired()) return convert();
  const int64_t version = nf4 ? 0 : weight._version();
  if (!dense_cache.defined() || dense_cache.scalar_type() != dtype ||
      dense_cache_version != version) {
    if (!dense_cache.defined()) dequantized_layers.push_back(self);
    torch::NoGradGuard no_grad;
    c10::InferenceMode kept_beyond_generation(false);  // training may read it after
    dense_cache = convert();
    dense_cache_version = version;
  }
  return dense_cache;
}

namespace {

// Whether an adapter is cheaper folded into the base weight for this call than applied to its
// rows: on a CPU with no gradient to keep (a prefill, a scoring pass), in the adapter's own
// dtype, once the rows' two thin matmuls (2 r (in + out) operations a row) would cost more than
// the fold (2 r in out, once). The product's matmul then runs over one weight, and neither the
// adapter's scale nor its sum makes a pass over the output. A decoding step's rows keep the
// decoding kernels, whose bits for a row do not depend on the rows beside it.
bool folds_adapter(const torch::Tensor& x, const torch::Tensor& A, int64_t in, int64_t out) {
  if (torch::GradMode::is_enabled() || !x.device().is_cpu() || x.scalar_type() != A.scalar_type())
    return false;
  const int64_t rows = x.numel() / in;
  return rows * (in + out) > in * out && !fused_kernel_applies(rows, x.scalar_type(), x.device());
}

}  // namespace

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  return forward_with_fused_base(x, torch::Tensor());
}

torch::Tensor LinearImpl::forward_with_fused_base(const torch::Tensor& x, torch::Tensor fused) {
  const bool reference = has_lora() && use_reference && reference_A.defined();
  const bool adapted = reference || (has_lora() && !use_reference && adapter_enabled);
  const auto& A = reference ? reference_A : lora_A;
  const auto& B = reference ? reference_B : lora_B;
  const bool dropout = adapted && lora_dropout > 0 && !reference && is_training();
  const auto bias_of = [&] { return bias.defined() ? bias.to(x.scalar_type()) : torch::Tensor(); };
  // Never both: a fused product means a decoding step's rows, which no adapter is folded for.
  if (!fused.defined() && adapted && !dropout && folds_adapter(x, A, in_features, out_features))
    return torch::linear(x, torch::addmm(base_weight(x.scalar_type()), B, A, 1, lora_scale),
                         bias_of());
  torch::Tensor y;
  if (!fused.defined() && nf4)
    if (auto product = fused_nf4_linear(x, *nf4)) fused = *product;
  if (fused.defined()) y = bias.defined() ? fused + bias.to(x.scalar_type()) : fused;
  // Without a dense copy held for the run (a GPU's case), a gradient through x must not make
  // autograd keep the dequantised weight: nf4_linear dequantises again in the backward pass.
  if (!y.defined() && nf4 && dequantized_scopes == 0 && torch::GradMode::is_enabled() &&
      x.requires_grad()) {
    y = nf4_linear(x, *nf4);
    if (bias.defined()) y = y + bias.to(x.scalar_type());
  }
  if (!y.defined()) y = torch::linear(x, base_weight(x.scalar_type()), bias_of());
  if (!adapted) return y;
  // A decoding step's rows; y is this call's own output.
  if (!dropout && lora_rows_add_(y, x, A, B, lora_scale)) return y;
  // The adapter path runs in the adapters' dtype (fp32) even on a bf16 model, as peft's 4-bit
  // layers do: its small update would otherwise be rounded to bf16 before it is added.
  auto h = dropout ? torch::dropout(x, lora_dropout, /*train=*/true) : x;
  if (h.scalar_type() != A.scalar_type()) h = h.to(A.scalar_type());
  const auto down = torch::linear(h, A);
  if (y.scalar_type() == down.scalar_type())  // scaled and added by the matmul itself
    return torch::addmm(y.reshape({-1, out_features}), down.reshape({-1, down.size(-1)}), B.t(), 1,
                        lora_scale)
        .view(y.sizes());
  auto update = torch::linear(down, B.to(A.scalar_type())) * lora_scale;
  return y + update.to(y.scalar_type());
}

std::vector<torch::Tensor> linears_of_one_input(const torch::Tensor& x,
                                                const std::vector<LinearImpl*>& layers) {
  std::vector<const Nf4Weight*> weights;
  for (const LinearImpl* layer : layers)
    if (layer->nf4) weights.push_back(&*layer->nf4);
  std::optional<std::vector<torch::Tensor>> bases;
  if (weights.size() == layers.size() && layers.size() > 1) bases = fused_nf4_linears(x, weights);
  std::vector<torch::Tensor> outputs;
  for (size_t i = 0; i < layers.size(); ++i)
    outputs.push_back(bases ? layers[i]->forward_with_fused_base(x, (*bases)[i])
                            : layers[i]->forward(x));
  return outputs;
}

void LinearImpl::quantize_nf4(int64_t blocksize) {
  if (nf4) return;
  if (!weight.defined())
    throw Error("linear layer: cannot quantise a weight that was never loaded");
  set_nf4(nf4_quantize(weight.detach(), blocksize));
}

void LinearImpl::set_nf4(Nf4Weight w) {
  nf4 = std::move(w);
  if (weight.defined()) parameters_.erase("weight");
  weight = torch::Tensor();
}

void LinearImpl::add_lora(const LoraSpec& spec) {
  if (spec.r <= 0) throw Error("lora: r must be > 0 (got " + std::to_string(spec.r) + ")");
  auto options = torch::TensorOptions().dtype(torch::kFloat32);
  if (nf4)
    options = options.device(nf4->device());
  else if (weight.defined())
    options = options.device(weight.device());
  lora_A = register_parameter("lora_A", torch::empty({spec.r, in_features}, options));
  torch::nn::init::kaiming_uniform_(lora_A, std::sqrt(5.0));  // peft's default for A
  lora_B = register_parameter("lora_B", torch::zeros({out_features, spec.r}, options));
  lora_scale = spec.alpha / double(spec.r);
  lora_dropout = spec.dropout;
}

void LinearImpl::merge_lora() {
  if (!has_lora()) return;
  torch::NoGradGuard no_grad;
  auto dense = base_weight(torch::kFloat32).clone();
  if (adapter_enabled)
    dense += torch::matmul(lora_B.to(torch::kFloat32), lora_A.to(torch::kFloat32)) * lora_scale;
  const auto dtype = nf4 ? torch::kFloat32 : weight.scalar_type();
  nf4.reset();
  parameters_.erase("lora_A");
  parameters_.erase("lora_B");
  lora_A = lora_B = torch::Tensor();
  if (weight.defined()) {
    weight.copy_(dense.to(dtype));
  } else {
    weight = register_parameter("weight", dense.to(dtype), /*requires_grad=*/false);
  }
}

RMSNormImpl::RMSNormImpl(int64_t size, double eps_) : eps(eps_) {
  weight = register_parameter("weight", torch::ones({size}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  if (auto y = rms_norm_loop(x, weight, eps)) return *y;  // a decoding step's rows
  auto h = x.to(torch::kFloat32);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * h.to(x.scalar_type());
}

}  // namespace citeforge::models
