#include "models/value_head.h"

#include <cmath>
#include <sstream>

#include "common/error.h"

namespace citeforge::models {

ValueHeadOptions width_scaled_value_head(int64_t hidden_size) {
  ValueHeadOptions options;
  options.hidden_size = hidden_size;
  options.init_std = 1.0 / double(hidden_size + 1);
  return options;
}

ValueHeadImpl::ValueHeadImpl(const ValueHeadOptions& opts) : options(opts) {
  if (options.hidden_size <= 0) {
    throw Error("value head: hidden_size must be > 0 (got " + std::to_string(options.hidden_size) +
                ")");
  }
  if (!(options.dropout >= 0.0 && options.dropout < 1.0)) {
    throw Error("value head: dropout must be in [0, 1) (got " + std::to_string(options.dropout) +
                ")");
  }
  if (!(options.init_std >= 0.0 && std::isfinite(options.init_std))) {
    throw Error("value head: init_std must be finite and >= 0 (got " +
                std::to_string(options.init_std) + ")");
  }
  dropout = register_module("dropout", torch::nn::Dropout(options.dropout));
  summary = register_module("summary",
                            torch::nn::Linear(torch::nn::LinearOptions(options.hidden_size, 1)));
  torch::NoGradGuard no_grad;
  summary->weight.normal_(0.0, options.init_std);
  summary->bias.zero_();
}

torch::Tensor ValueHeadImpl::forward(const torch::Tensor& hidden) {
  if (hidden.dim() != 3 || hidden.size(2) != options.hidden_size) {
    std::ostringstream msg;
    msg << "value head: hidden states have shape " << hidden.sizes() << ", expected [B, T, "
        << options.hidden_size << "]";
    throw Error(msg.str());
  }
  if (!hidden.is_floating_point()) {
    throw Error("value head: hidden states must be floating point");
  }
  // The decoder may run in bf16; the critic's regression is done in fp32 so small value
  // differences (the advantages) are not lost to an 8-bit mantissa.
  auto h = hidden.scalar_type() == torch::kFloat32 ? hidden : hidden.to(torch::kFloat32);
  return summary->forward(dropout->forward(h)).squeeze(-1);
}

}  // namespace citeforge::models
