// libFuzzer target for safetensors headers and shard indexes: any bytes are parsed as a whole
// .safetensors file and as a model.safetensors.index.json. A defect must be a citeforge::Error;
// a header that parses must describe tensors inside the file that tile its data section, and an
// index that parses names shards by plain file names. A broken promise aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "models/safetensors_header.h"
#include "tests/fuzz/fuzz_support.h"

using namespace citeforge;

using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto header = models::parse_safetensors_header(bytes, "fuzz.safetensors");
    require(header.section >= 8 && header.section <= size);
    size_t covered = 0;
    for (const auto& t : header.tensors) {
      require(t.begin <= t.end && header.section + t.end <= size);
      require(models::safetensors_dtype_bytes(t.dtype) > 0);
      covered += t.end - t.begin;
    }
    require(covered == size - header.section);  // tiled: no overlap, no gap
  } catch (const Error&) {
  }
  try {
    for (const auto& [tensor, shard] :
         models::parse_safetensors_index(bytes, "model.safetensors.index.json"))
      require(!shard.empty() && shard.find('/') == std::string::npos && shard != ".." &&
              shard != ".");
  } catch (const Error&) {
  }
  return 0;
}
