// GGUF tensors as float32 LibTorch tensors: the types a Llama-family checkpoint commonly ships
// in (F32, F16, BF16, Q8_0, Q4_0, Q4_1), read from the file's mapping.
#pragma once

#include <torch/torch.h>

#include "models/gguf.h"

namespace citeforge::models {

// The tensor as float32 in PyTorch order (dims reversed, so a ggml [ne0, ne1] matrix becomes
// [ne1, ne0] rows x columns). Types other than F32, F16, BF16, Q8_0, Q4_0 and Q4_1 are an Error
// naming the file, the tensor and its type.
torch::Tensor dequantize(const GgufFile& file, const GgufTensor& tensor);

// Rows [begin, end) of the tensor as float32 [end - begin, dims[0]], where a row is dims[0]
// values (one row of PyTorch's last dimension): a large tensor converted a slice at a time.
torch::Tensor dequantize_rows(const GgufFile& file, const GgufTensor& tensor, int64_t begin,
                              int64_t end);

}  // namespace citeforge::models
