#include "models/gguf_dequantize.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstring>

#include "common/error.h"

namespace citeforge::models {
namespace {

float half_at(const unsigned char* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return static_cast<float>(c10::Half(bits, c10::Half::from_bits()));
}

// Q4_0 / Q4_1 store a block's first 16 values in the low nibbles and the last 16 in the high
// ones; the value is q * d - 8 d (Q4_0) or q * d + m (Q4_1).
void dequantize_q4(const unsigned char* src, float* dst, int64_t blocks, bool with_min) {
  const int64_t stride = with_min ? 20 : 18;
  for (int64_t b = 0; b < blocks; ++b, src += stride, dst += 32) {
    const float d = half_at(src);
    const float m = with_min ? half_at(src + 2) : 0.0f;
    const unsigned char* q = src + (with_min ? 4 : 2);
    for (int j = 0; j < 16; ++j) {
      const int lo = q[j] & 0x0F, hi = q[j] >> 4;
      if (with_min) {
        dst[j] = static_cast<float>(lo) * d + m;
        dst[j + 16] = static_cast<float>(hi) * d + m;
      } else {
        dst[j] = static_cast<float>(lo - 8) * d;
        dst[j + 16] = static_cast<float>(hi - 8) * d;
      }
    }
  }
}

void dequantize_q8_0(const unsigned char* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 34, dst += 32) {
    const float d = half_at(src);
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
  }
}

}  // namespace

torch::Tensor dequantize_rows(const GgufFile& file, const GgufTensor& tensor, int64_t begin,
                              int64_t end) {
  require_supported_type(file, tensor);
  if (!file.mapping)
    throw Error(file.path + ": tensor '" + tensor.name + "': the file was parsed, not mapped");
  const auto layout = ggml_block_layout(tensor.type);
  const int64_t row = tensor.dims[0];
  const int64_t rows = tensor_rows(tensor);
  if (begin < 0 || end > rows || begin > end)
    throw Error(file.path + ": tensor '" + tensor.name + "': rows " + std::to_string(begin) + "-" +
                std::to_string(end) + " outside its " + std::to_string(rows));
  const int64_t count = (end - begin) * row;
  auto out = torch::empty({end - begin, row}, torch::kFloat32);
  float* dst = out.data_ptr<float>();
  const int64_t row_bytes = row / layout.block * layout.bytes;
  const auto* src = reinterpret_cast<const unsigned char*>(file.mapping->data + file.data_offset +
                                                           tensor.offset) +
                    begin * row_bytes;
  switch (static_cast<GgmlType>(tensor.type)) {
    case GgmlType::kF32:
      std::memcpy(dst, src, count * 4);
      break;
    case GgmlType::kF16:
      for (int64_t i = 0; i < count; ++i) dst[i] = half_at(src + 2 * i);
      break;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        dst[i] = static_cast<float>(c10::BFloat16(bits, c10::BFloat16::from_bits()));
      }
      break;
    case GgmlType::kQ8_0:
      dequantize_q8_0(src, dst, count / 32);
      break;
    case GgmlType::kQ4_0:
      dequantize_q4(src, dst, count / 32, false);
      break;
    case GgmlType::kQ4_1:
      dequantize_q4(src, dst, count / 32, true);
      break;
  }
  return out;
}

torch::Tensor dequantize(const GgufFile& file, const GgufTensor& tensor) {
  std::vector<int64_t> shape(tensor.dims.rbegin(), tensor.dims.rend());
  return dequantize_rows(file, tensor, 0, tensor_rows(tensor)).view(shape);
}

}  // namespace citeforge::models
