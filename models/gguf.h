// GGUF files (llama.cpp's single-file checkpoint format, versions 2 and 3): the metadata of every
// value type and the tensor directory, checked before any tensor is read. No LibTorch here, so
// the fuzzer links it alone; dequantisation is gguf_dequantize.h. The layout follows the
// format's specification in the ggml repository (docs/gguf.md); little-endian files only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/mapped_file.h"

namespace citeforge::models {

// One metadata value. Arrays hold their elements as values of the element type.
struct GgufValue {
  enum class Type : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
  };
  Type type = Type::kU8;
  Type element_type = Type::kU8;  // for arrays
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> value;

  // Typed reads; a value of another kind is an Error naming `key`.
  int64_t integer(const std::string& key) const;
  double number(const std::string& key) const;
  bool boolean(const std::string& key) const;
  const std::string& string(const std::string& key) const;
  const std::vector<GgufValue>& array(const std::string& key) const;
};

// ggml's tensor type numbers, for the types this reader knows by name.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 8,
  kBF16 = 30,
};

// Values per block and bytes per block of a tensor type this reader dequantises ({0, 0} for
// the others).
struct GgmlBlockLayout {
  int64_t block = 0;
  int64_t bytes = 0;
};
GgmlBlockLayout ggml_block_layout(uint32_t type);

// The name ggml gives a tensor type number ("Q4_K", "IQ2_XS", ...), for error messages.
std::string ggml_type_name(uint32_t type);

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous (row) length
  uint32_t type = 0;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t bytes = 0;   // computed from dims and type; 0 for unsupported types
};

struct GgufFile {
  std::string path;
  uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensor> tensors;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;                   // where the data section starts in the file
  std::shared_ptr<const MappedFile> mapping;  // the whole file, mapped: paged in as it is read

  bool has(const std::string& key) const { return metadata.count(key) > 0; }
  // The value of `key`; a missing key is an Error naming the file and the key.
  const GgufValue& at(const std::string& key) const;
  const GgufTensor* find(const std::string& name) const;
};

// Maps and validates a GGUF file: magic, version, every metadata entry, every tensor's
// directory entry and that its bytes lie inside the file. Nothing of the tensor data is read. Any
// defect (truncation, bad magic, an offset past the end, a misaligned tensor) is an Error naming
// the file and what is wrong. Tensors of types this reader cannot dequantise are listed;
// dequantize() names them.
GgufFile read_gguf(const std::string& path);

// The same checks on bytes in memory (`path` names them in errors); the result has no mapping,
// so only its metadata and directory are usable. For the fuzzer and tests.
GgufFile parse_gguf(std::string_view bytes, const std::string& path);

// The chat template (Jinja) the file carries, or "".
std::string gguf_chat_template(const GgufFile& file);

// True when `path` names a .gguf file by its extension.
bool is_gguf_path(const std::string& path);

// How many rows of dims[0] values the tensor has.
int64_t tensor_rows(const GgufTensor& tensor);

// An Error naming the tensor when dequantize() cannot read its type.
void require_supported_type(const GgufFile& file, const GgufTensor& tensor);

// Hands the tensor's pages of the mapping back once it has been converted, so that reading a
// checkpoint tensor by tensor keeps at most one tensor's bytes resident.
void release_tensor_pages(const GgufFile& file, const GgufTensor& tensor);

}  // namespace citeforge::models
