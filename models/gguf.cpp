#include "models/gguf.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstring>
#include <string_view>

#include "common/error.h"
#include "common/mapped_file.h"

namespace citeforge::models {
namespace {

using Type = GgufValue::Type;

// A bounds-checked little-endian cursor over the file; every overrun names what was being read.
struct Reader {
  std::string_view bytes;
  const std::string& path;
  uint64_t pos = 0;

  void need(uint64_t n, const std::string& what) const {
    if (n > bytes.size() || pos > bytes.size() - n)
      fail_at(path, "byte " + std::to_string(pos), "file ends inside " + what + " (truncated?)");
  }
  template <typename T>
  T scalar(const std::string& what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes.data() + pos, sizeof(T));
    pos += sizeof(T);
    return value;
  }
  std::string text(const std::string& what) {
    auto length = scalar<uint64_t>(what);
    need(length, what);
    std::string s(bytes.substr(pos, length));
    pos += length;
    return s;
  }
};

GgufValue read_value(Reader& in, Type type, const std::string& key, int depth = 0) {
  GgufValue v;
  v.type = type;
  const std::string what = "the value of '" + key + "'";
  switch (type) {
    case Type::kU8:
      v.value = uint64_t{in.scalar<uint8_t>(what)};
      break;
    case Type::kI8:
      v.value = int64_t{in.scalar<int8_t>(what)};
      break;
    case Type::kU16:
      v.value = uint64_t{in.scalar<uint16_t>(what)};
      break;
    case Type::kI16:
      v.value = int64_t{in.scalar<int16_t>(what)};
      break;
    case Type::kU32:
      v.value = uint64_t{in.scalar<uint32_t>(what)};
      break;
    case Type::kI32:
      v.value = int64_t{in.scalar<int32_t>(what)};
      break;
    case Type::kU64:
      v.value = in.scalar<uint64_t>(what);
      break;
    case Type::kI64:
      v.value = in.scalar<int64_t>(what);
      break;
    case Type::kF32:
      v.value = double{in.scalar<float>(what)};
      break;
    case Type::kF64:
      v.value = in.scalar<double>(what);
      break;
    case Type::kBool: {
      auto b = in.scalar<uint8_t>(what);
      if (b > 1) fail_at(in.path, "key '" + key + "'", "bool value " + std::to_string(b));
      v.value = b == 1;
      break;
    }
    case Type::kString:
      v.value = in.text(what);
      break;
    case Type::kArray: {
      if (depth > 0) fail_at(in.path, "key '" + key + "'", "nested arrays are not supported");
      auto element = in.scalar<uint32_t>(what);
      if (element > static_cast<uint32_t>(Type::kF64))
        fail_at(in.path, "key '" + key + "'",
                "unknown array element type " + std::to_string(element));
      v.element_type = static_cast<Type>(element);
      auto count = in.scalar<uint64_t>(what);
      // Each element takes at least one byte, so a count beyond the file is corrupt.
      in.need(count, what);
      std::vector<GgufValue> items;
      items.reserve(count);
      for (uint64_t i = 0; i < count; ++i) items.push_back(read_value(in, v.element_type, key, 1));
      v.value = std::move(items);
      break;
    }
    default:
      fail_at(in.path, "key '" + key + "'",
              "unknown value type " + std::to_string(static_cast<uint32_t>(type)));
  }
  return v;
}

struct BlockLayout {
  int64_t block = 0;  // values per block
  int64_t bytes = 0;  // bytes per block
};

BlockLayout layout_of(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
      return {1, 4};
    case GgmlType::kF16:
      return {1, 2};
    case GgmlType::kBF16:
      return {1, 2};
    case GgmlType::kQ8_0:
      return {32, 2 + 32};
    case GgmlType::kQ4_0:
      return {32, 2 + 16};
    case GgmlType::kQ4_1:
      return {32, 2 + 2 + 16};
  }
  return {};
}

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

int64_t GgufValue::integer(const std::string& key) const {
  if (auto* u = std::get_if<uint64_t>(&value)) return static_cast<int64_t>(*u);
  if (auto* i = std::get_if<int64_t>(&value)) return *i;
  throw Error("GGUF key '" + key + "': expected an integer");
}
double GgufValue::number(const std::string& key) const {
  if (auto* d = std::get_if<double>(&value)) return *d;
  return static_cast<double>(integer(key));
}
bool GgufValue::boolean(const std::string& key) const {
  if (auto* b = std::get_if<bool>(&value)) return *b;
  throw Error("GGUF key '" + key + "': expected a bool");
}
const std::string& GgufValue::string(const std::string& key) const {
  if (auto* s = std::get_if<std::string>(&value)) return *s;
  throw Error("GGUF key '" + key + "': expected a string");
}
const std::vector<GgufValue>& GgufValue::array(const std::string& key) const {
  if (auto* a = std::get_if<std::vector<GgufValue>>(&value)) return *a;
  throw Error("GGUF key '" + key + "': expected an array");
}

std::string ggml_type_name(uint32_t type) {
  static const char* names[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",  "Q5_0",  "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",    "IQ1_M", "BF16",
  };
  if (type < sizeof(names) / sizeof(names[0])) return names[type];
  return "type " + std::to_string(type);
}

const GgufValue& GgufFile::at(const std::string& key) const {
  auto it = metadata.find(key);
  if (it == metadata.end()) fail_at(path, "", "missing metadata key '" + key + "'");
  return it->second;
}

const GgufTensor* GgufFile::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

GgufFile read_gguf(const std::string& path) {
  GgufFile file;
  file.path = path;
  file.mapping = map_file(path);
  Reader in{file.mapping->bytes(), path};
  if (in.bytes.size() < 4 || in.bytes.substr(0, 4) != "GGUF")
    fail_at(path, "", "not a GGUF file (bad magic)");
  in.pos = 4;
  file.version = in.scalar<uint32_t>("the version");
  if (file.version != 2 && file.version != 3)
    fail_at(path, "",
            "unsupported GGUF version " + std::to_string(file.version) +
                " (supported: 2, 3; a big-endian file also reads as a huge version)");
  const auto tensor_count = in.scalar<uint64_t>("the tensor count");
  const auto kv_count = in.scalar<uint64_t>("the metadata count");
  in.need(kv_count, "the metadata");
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key = in.text("metadata key " + std::to_string(i));
    auto type = in.scalar<uint32_t>("the type of '" + key + "'");
    if (file.metadata.count(key)) fail_at(path, "key '" + key + "'", "appears twice");
    file.metadata[key] = read_value(in, static_cast<Type>(type), key);
  }
  if (file.has("general.alignment")) {
    auto alignment = file.at("general.alignment").integer("general.alignment");
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
      fail_at(path, "key 'general.alignment'",
              "must be a power of two, got " + std::to_string(alignment));
    file.alignment = static_cast<uint64_t>(alignment);
  }
  in.need(tensor_count, "the tensor directory");
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensor t;
    t.name = in.text("tensor name " + std::to_string(i));
    const std::string what = "the directory entry of tensor '" + t.name + "'";
    auto n_dims = in.scalar<uint32_t>(what);
    if (n_dims == 0 || n_dims > 4)
      fail_at(path, "tensor '" + t.name + "'",
              std::to_string(n_dims) + " dimensions (1-4 allowed)");
    int64_t count = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      auto dim = in.scalar<uint64_t>(what);
      if (dim == 0 || dim > (uint64_t{1} << 40))
        fail_at(path, "tensor '" + t.name + "'", "bad dimension " + std::to_string(dim));
      t.dims.push_back(static_cast<int64_t>(dim));
      count *= static_cast<int64_t>(dim);
    }
    t.type = in.scalar<uint32_t>(what);
    t.offset = in.scalar<uint64_t>(what);
    auto layout = layout_of(t.type);
    if (layout.block > 0) {
      if (t.dims[0] % layout.block != 0)
        fail_at(path, "tensor '" + t.name + "'",
                "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
                    ggml_type_name(t.type) + " block size " + std::to_string(layout.block));
      t.bytes = static_cast<uint64_t>(count / layout.block * layout.bytes);
    }
    if (t.offset % file.alignment != 0)
      fail_at(path, "tensor '" + t.name + "'",
              "data offset " + std::to_string(t.offset) + " is not aligned to " +
                  std::to_string(file.alignment));
    file.tensors.push_back(std::move(t));
  }
  file.data_offset = (in.pos + file.alignment - 1) / file.alignment * file.alignment;
  const uint64_t size = file.mapping->size;
  for (const auto& t : file.tensors) {
    if (file.data_offset > size || t.offset > size - file.data_offset ||
        t.bytes > size - file.data_offset - t.offset)
      fail_at(path, "tensor '" + t.name + "'",
              "data at offset " + std::to_string(t.offset) + " (+" + std::to_string(t.bytes) +
                  " bytes) lies past the end of the file (truncated?)");
  }
  return file;
}

void require_supported_type(const GgufFile& file, const GgufTensor& tensor) {
  if (layout_of(tensor.type).block == 0)
    fail_at(file.path, "tensor '" + tensor.name + "'",
            "unsupported tensor type " + ggml_type_name(tensor.type) +
                " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)");
}

void release_tensor_pages(const GgufFile& file, const GgufTensor& tensor) {
  const uint64_t begin = file.data_offset + tensor.offset;
  release_pages(*file.mapping, begin, begin + tensor.bytes);
}

torch::Tensor dequantize_rows(const GgufFile& file, const GgufTensor& tensor, int64_t begin,
                              int64_t end) {
  require_supported_type(file, tensor);
  const auto layout = layout_of(tensor.type);
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

int64_t tensor_rows(const GgufTensor& tensor) {
  int64_t rows = 1;
  for (size_t d = 1; d < tensor.dims.size(); ++d) rows *= tensor.dims[d];
  return rows;
}

torch::Tensor dequantize(const GgufFile& file, const GgufTensor& tensor) {
  std::vector<int64_t> shape(tensor.dims.rbegin(), tensor.dims.rend());
  return dequantize_rows(file, tensor, 0, tensor_rows(tensor)).view(shape);
}

}  // namespace citeforge::models
