// The parts of a safetensors checkpoint that come from strangers as text and numbers: one file's
// header (its length prefix, the JSON directory of tensors, the data section's layout) and a
// shard index's weight map. Checked here without LibTorch, so the fuzzers (tests/fuzz/) run the
// same code as the loader (models/safetensors.*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace citeforge::models {

struct SafetensorsHeaderEntry {
  std::string name;
  std::string dtype;  // safetensors spelling: F32, F16, BF16, I64, ...
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;  // byte range inside the data section
};

struct SafetensorsHeader {
  size_t section = 0;  // where the data section starts in the file
  std::vector<SafetensorsHeaderEntry> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__", string values only
};

// The size in bytes of one element of a safetensors dtype, 0 for a dtype citeforge does not read.
size_t safetensors_dtype_bytes(const std::string& dtype);

// Parses and checks the header of a whole file's bytes: a length that fits the file, a JSON
// object, each tensor with a known dtype, a shape whose size does not overflow and offsets that
// match it, and tensors that tile the data section (no overlap, no gap, nothing after the last).
// Any failure is an Error naming `path` and the tensor.
SafetensorsHeader parse_safetensors_header(std::string_view file, const std::string& path);

// A model.safetensors.index.json's weight map (tensor -> shard file name); shard names must be
// plain file names in the index's own directory.
std::map<std::string, std::string> parse_safetensors_index(std::string_view text,
                                                           const std::string& path);

}  // namespace citeforge::models
