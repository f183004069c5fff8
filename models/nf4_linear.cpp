#include "models/nf4_linear.h"

namespace citeforge::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The codes travel in the context's saved data (reference-counted tensors, no copy), so the
// backward pass does not depend on the layer still being alive.
void save_codes(AutogradContext* ctx, const Nf4Weight& w) {
  auto& saved = ctx->saved_data;
  saved["shape"] = w.shape;
  saved["numel"] = w.numel;
  saved["blocksize"] = w.blocksize;
  saved["absmax_blocksize"] = w.absmax_blocksize;
  saved["packed"] = w.packed;
  saved["absmax_codes"] = w.absmax_codes;
  saved["absmax_scale"] = w.absmax_scale;
  saved["absmax_offset"] = static_cast<double>(w.absmax_offset);
}

Nf4Weight saved_codes(AutogradContext* ctx) {
  const auto& saved = ctx->saved_data;
  Nf4Weight w;
  w.shape = saved.at("shape").toIntVector();
  w.numel = saved.at("numel").toInt();
  w.blocksize = saved.at("blocksize").toInt();
  w.absmax_blocksize = saved.at("absmax_blocksize").toInt();
  w.packed = saved.at("packed").toTensor();
  w.absmax_codes = saved.at("absmax_codes").toTensor();
  w.absmax_scale = saved.at("absmax_scale").toTensor();
  w.absmax_offset = static_cast<float>(saved.at("absmax_offset").toDouble());
  return w;
}

struct Nf4LinearFunction : torch::autograd::Function<Nf4LinearFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const Nf4Weight& w) {
    save_codes(ctx, w);
    ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
    return torch::linear(x, nf4_dequantize(w, x.scalar_type()));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto dtype = static_cast<torch::Dtype>(ctx->saved_data.at("dtype").toInt());
    const auto dense = nf4_dequantize(saved_codes(ctx), dtype);
    // d(x W^T)/dx applied to the output's gradient: grad W, as torch::linear's backward does.
    return {grad_outputs[0].matmul(dense), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor nf4_linear(const torch::Tensor& x, const Nf4Weight& weight) {
  return Nf4LinearFunction::apply(x, weight);
}

}  // namespace citeforge::models
