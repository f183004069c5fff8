#include "models/gguf.h"

#include <cstring>
#include <set>
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

// The fewest bytes a value of `type` takes in the file.
uint64_t element_bytes(Type type) {
  switch (type) {
    case Type::kU8:
    case Type::kI8:
    case Type::kBool:
      return 1;
    case Type::kU16:
    case Type::kI16:
      return 2;
    case Type::kU32:
    case Type::kI32:
    case Type::kF32:
      return 4;
    default:
      return 8;  // 64-bit numbers, a string's length, an array's header
  }
}

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
      // The largest arrays of real files (vocabularies, merges) hold a few hundred thousand
      // entries; each element in memory is some 60 bytes, so a count only bounded by a
      // multi-gigabyte file's size would still exhaust memory.
      if (count > (uint64_t{1} << 24))
        fail_at(in.path, "key '" + key + "'",
                "array of " + std::to_string(count) + " elements (at most 2^24)");
      // Each element takes at least its fixed size (a string its 8-byte length).
      in.need(count * element_bytes(v.element_type), what);
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

GgmlBlockLayout ggml_block_layout(uint32_t type) {
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
  auto mapping = map_file(path);
  GgufFile file = parse_gguf(mapping->bytes(), path);
  file.mapping = std::move(mapping);
  return file;
}

GgufFile parse_gguf(std::string_view bytes, const std::string& path) {
  GgufFile file;
  file.path = path;
  Reader in{bytes, path};
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
    if (alignment <= 0 || (alignment & (alignment - 1)) != 0 || alignment > (int64_t{1} << 24))
      fail_at(path, "key 'general.alignment'",
              "must be a power of two up to 16 MiB, got " + std::to_string(alignment));
    file.alignment = static_cast<uint64_t>(alignment);
  }
  in.need(tensor_count, "the tensor directory");
  std::set<std::string> names;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensor t;
    t.name = in.text("tensor name " + std::to_string(i));
    const std::string what = "the directory entry of tensor '" + t.name + "'";
    auto n_dims = in.scalar<uint32_t>(what);
    if (n_dims == 0 || n_dims > 4)
      fail_at(path, "tensor '" + t.name + "'",
              std::to_string(n_dims) + " dimensions (1-4 allowed)");
    if (!names.insert(t.name).second) fail_at(path, "tensor '" + t.name + "'", "appears twice");
    int64_t count = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      auto dim = in.scalar<uint64_t>(what);
      if (dim == 0 || dim > (uint64_t{1} << 40))
        fail_at(path, "tensor '" + t.name + "'", "bad dimension " + std::to_string(dim));
      t.dims.push_back(static_cast<int64_t>(dim));
      // No tensor of a real file comes near 2^56 values; beyond it the byte count could overflow.
      if (__builtin_mul_overflow(count, static_cast<int64_t>(dim), &count) ||
          count > (int64_t{1} << 56))
        fail_at(path, "tensor '" + t.name + "'", "its dimensions' product overflows");
    }
    t.type = in.scalar<uint32_t>(what);
    t.offset = in.scalar<uint64_t>(what);
    auto layout = ggml_block_layout(t.type);
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
  const uint64_t size = bytes.size();
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
  if (ggml_block_layout(tensor.type).block == 0)
    fail_at(file.path, "tensor '" + tensor.name + "'",
            "unsupported tensor type " + ggml_type_name(tensor.type) +
                " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)");
}

void release_tensor_pages(const GgufFile& file, const GgufTensor& tensor) {
  const uint64_t begin = file.data_offset + tensor.offset;
  if (file.mapping) release_pages(*file.mapping, begin, begin + tensor.bytes);
}

int64_t tensor_rows(const GgufTensor& tensor) {
  int64_t rows = 1;
  for (size_t d = 1; d < tensor.dims.size(); ++d) rows *= tensor.dims[d];
  return rows;
}

std::string gguf_chat_template(const GgufFile& file) {
  return file.has("tokenizer.chat_template")
             ? file.at("tokenizer.chat_template").string("tokenizer.chat_template")
             : "";
}

bool is_gguf_path(const std::string& path) {
  return path.size() > 5 && path.ends_with(".gguf");
}

}  // namespace citeforge::models
