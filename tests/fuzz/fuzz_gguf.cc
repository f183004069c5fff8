// libFuzzer target for the GGUF reader: any bytes are parsed as a GGUF file. A defect must be a
// citeforge::Error; a file that parses must keep the promises the importer relies on (every
// tensor's bytes inside the input and equal to what its dims and type imply; typed metadata
// reads fail cleanly on values of another kind). A broken promise aborts, which the fuzzer
// reports like a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/error.h"
#include "models/gguf.h"
#include "tests/fuzz/fuzz_support.h"

using namespace citeforge;

namespace {

using fuzz::require;

void read_typed(const models::GgufValue& value, const std::string& key) {
  try {
    value.integer(key);
  } catch (const Error&) {
  }
  try {
    value.string(key);
  } catch (const Error&) {
  }
  try {
    for (const auto& item : value.array(key)) read_typed(item, key);
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  models::GgufFile file;
  try {
    file = models::parse_gguf(bytes, "fuzz.gguf");
  } catch (const Error&) {
    return 0;
  }
  require(file.data_offset <= size || file.tensors.empty());
  for (const auto& t : file.tensors) {
    require(!t.dims.empty() && t.dims.size() <= 4);
    require(t.offset <= size && t.bytes <= size);
    require(file.data_offset + t.offset + t.bytes <= size);
    const auto layout = models::ggml_block_layout(t.type);
    if (layout.block > 0) {
      require(t.dims[0] % layout.block == 0);
      const uint64_t row_bytes = static_cast<uint64_t>(t.dims[0] / layout.block * layout.bytes);
      require(static_cast<uint64_t>(models::tensor_rows(t)) * row_bytes == t.bytes);
    }
  }
  for (const auto& [key, value] : file.metadata) read_typed(value, key);
  return 0;
}
