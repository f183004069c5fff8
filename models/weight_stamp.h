// Which tensor, at which in-place version, a derived copy of a weight (the output layer converted
// to the logits' dtype, or its 16-bit decoding copy) was made from: the copy is remade when the
// weight is replaced or changed in place.
#pragma once

#include <torch/torch.h>

namespace citeforge::models {

struct WeightStamp {
  const void* source = nullptr;
  int64_t version = -1;

  bool matches(const torch::Tensor& weight) const {
    return source == weight.unsafeGetTensorImpl() && version == weight._version();
  }
  void take(const torch::Tensor& weight) {
    source = weight.unsafeGetTensorImpl();
    version = weight._version();
  }
};

}  // namespace citeforge::models
