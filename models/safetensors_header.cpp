#include "models/safetensors_header.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/error.h"
#include "common/json_fits.h"

namespace citeforge::models {

using nlohmann::json;

size_t safetensors_dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, size_t> kBytes = {
      {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U8", 1},  {"BOOL", 1}};
  const auto it = kBytes.find(dtype);
  return it == kBytes.end() ? 0 : it->second;
}

namespace {

SafetensorsHeaderEntry parse_entry(const std::string& name, const json& info, size_t data_size,
                                   const std::string& path) {
  const std::string where = "tensor '" + name + "'";
  if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
      !info.contains("data_offsets"))
    fail_at(path, where, "needs dtype, shape and data_offsets");
  SafetensorsHeaderEntry entry;
  entry.name = name;
  if (!json_fits<std::vector<int64_t>>(info["shape"]) ||
      !json_fits<std::vector<size_t>>(info["data_offsets"]))
    fail_at(path, where, "shape and data_offsets must hold integers that fit");
  try {
    entry.dtype = info["dtype"].get<std::string>();
    entry.shape = info["shape"].get<std::vector<int64_t>>();
    auto offsets = info["data_offsets"].get<std::vector<size_t>>();
    if (offsets.size() != 2) fail_at(path, where, "data_offsets must have two entries");
    entry.begin = offsets[0];
    entry.end = offsets[1];
  } catch (const json::exception&) {
    fail_at(path, where, "malformed dtype, shape or data_offsets");
  }
  const size_t bytes = safetensors_dtype_bytes(entry.dtype);
  if (bytes == 0) fail_at(path, where, "unsupported dtype '" + entry.dtype + "'");
  size_t numel = 1;
  for (int64_t d : entry.shape) {
    if (d < 0) fail_at(path, where, "negative dimension in shape");
    if (d != 0 && numel > std::numeric_limits<size_t>::max() / bytes / size_t(d))
      fail_at(path, where, "shape's size overflows");
    numel *= static_cast<size_t>(d);
  }
  if (entry.end < entry.begin || entry.end - entry.begin != numel * bytes)
    fail_at(path, where,
            "data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                ") do not match shape and dtype (" + std::to_string(numel * bytes) + " bytes)");
  if (entry.end > data_size)
    fail_at(path, where,
            "data ends at byte " + std::to_string(entry.end) + " but the data section has " +
                std::to_string(data_size) + " bytes (truncated file)");
  return entry;
}

// The format's rule (and the reference reader's): the tensors tile the data section, with
// neither overlaps, which would let one tensor's bytes pass for another's, nor gaps.
void check_tiling(const std::vector<SafetensorsHeaderEntry>& tensors, size_t data_size,
                  const std::string& path) {
  std::vector<std::tuple<size_t, size_t, std::string>> ranges;
  for (const auto& t : tensors) ranges.emplace_back(t.begin, t.end, t.name);
  std::sort(ranges.begin(), ranges.end());
  size_t next = 0;
  for (const auto& [begin, end, name] : ranges) {
    if (begin < next)
      fail_at(path, "tensor '" + name + "'",
              "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                  ") overlap another tensor's bytes");
    if (begin > next)
      fail_at(path, "tensor '" + name + "'",
              "data_offsets start at byte " + std::to_string(begin) + ", leaving bytes " +
                  std::to_string(next) + "-" + std::to_string(begin) + " unused (a gap)");
    next = end;
  }
  if (next != data_size)
    fail_at(path, "data section",
            std::to_string(data_size - next) + " bytes after the last tensor belong to none");
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view file, const std::string& path) {
  if (file.size() < 8)
    fail_at(
        path, "header",
        "file is " + std::to_string(file.size()) + " bytes, too short for a safetensors header");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file.data(), 8);  // little-endian on every platform we build for
  if (header_len > file.size() - 8)
    fail_at(path, "header",
            "header length " + std::to_string(header_len) + " exceeds the file size " +
                std::to_string(file.size()) + " (truncated or not a safetensors file)");
  SafetensorsHeader out;
  out.section = 8 + header_len;
  json header;
  try {
    header = json::parse(file.substr(8, header_len));
  } catch (const json::exception& e) {
    fail_at(path, "header", std::string("invalid JSON: ") + e.what());
  }
  if (!header.is_object()) fail_at(path, "header", "expected a JSON object");
  const size_t data_size = file.size() - out.section;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (info.is_object())
        for (auto& [k, v] : info.items())
          if (v.is_string()) out.metadata[k] = v.get<std::string>();
      continue;
    }
    out.tensors.push_back(parse_entry(name, info, data_size, path));
  }
  check_tiling(out.tensors, data_size, path);
  return out;
}

std::map<std::string, std::string> parse_safetensors_index(std::string_view text,
                                                           const std::string& path) {
  json index;
  try {
    index = json::parse(text);
  } catch (const json::parse_error& e) {
    fail_at(path, "byte " + std::to_string(e.byte), "invalid JSON");
  } catch (const json::exception& e) {  // a number past every type: out_of_range
    fail_at(path, "", std::string("invalid JSON: ") + e.what());
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    fail_at(path, "field 'weight_map'", "missing or not an object");
  std::map<std::string, std::string> owner;
  for (auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string()) fail_at(path, "weight_map['" + name + "']", "expected a file name");
    const std::string file = shard.get<std::string>();
    // A shard is a file beside the index: "../x" or "/etc/x" would read outside the model.
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
      fail_at(path, "weight_map['" + name + "']",
              "'" + file + "' is not a file name in the index's directory");
    owner[name] = file;
  }
  return owner;
}

}  // namespace citeforge::models
