#include "models/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "common/file_io.h"

namespace citeforge::models {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
  size_t bytes;
};

constexpr DtypeInfo kDtypes[] = {
    {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2}, {"BF16", torch::kBFloat16, 2},
    {"F64", torch::kFloat64, 8}, {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},   {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const DtypeInfo* dtype_by_name(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const DtypeInfo& dtype_by_type(torch::ScalarType type, const std::string& tensor) {
  for (const auto& d : kDtypes)
    if (type == d.type) return d;
  throw Error("tensor '" + tensor + "': dtype " + std::string(c10::toString(type)) +
              " cannot be stored in safetensors");
}

// Parses one file's header and adds its tensors to `out`. `expected` (from a shard index)
// lists the names this file must hold.
void add_file(SafetensorsCheckpoint& out, const std::string& path) {
  auto file = map_file(path);
  const char* base = file->data;
  if (file->size < 8)
    fail_at(path, "header",
            "file is " + std::to_string(file->size) + " bytes, too short for a safetensors header");
  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);  // little-endian on every platform we build for
  if (header_len > file->size - 8)
    fail_at(path, "header",
            "header length " + std::to_string(header_len) + " exceeds the file size " +
                std::to_string(file->size) + " (truncated or not a safetensors file)");
  const size_t section = 8 + header_len;
  const char* header_text = base + 8;
  json header;
  try {
    header = json::parse(header_text, header_text + header_len);
  } catch (const json::exception& e) {
    fail_at(path, "header", std::string("invalid JSON: ") + e.what());
  }
  if (!header.is_object()) fail_at(path, "header", "expected a JSON object");
  const size_t data_size = file->size - section;
  std::vector<std::tuple<size_t, size_t, std::string>> ranges;  // this file's, for the layout check
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (out.metadata.empty() && info.is_object())
        for (auto& [k, v] : info.items())
          if (v.is_string()) out.metadata[k] = v.get<std::string>();
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (out.tensors.count(name)) fail_at(path, where, "appears in more than one file");
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
        !info.contains("data_offsets"))
      fail_at(path, where, "needs dtype, shape and data_offsets");
    TensorEntry entry;
    entry.file = path;
    entry.mapping = file;
    entry.section = section;
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
    const DtypeInfo* dtype = dtype_by_name(entry.dtype);
    if (!dtype) fail_at(path, where, "unsupported dtype '" + entry.dtype + "'");
    size_t numel = 1;
    for (int64_t d : entry.shape) {
      if (d < 0) fail_at(path, where, "negative dimension in shape");
      if (d != 0 && numel > std::numeric_limits<size_t>::max() / dtype->bytes / size_t(d))
        fail_at(path, where, "shape's size overflows");
      numel *= static_cast<size_t>(d);
    }
    if (entry.end < entry.begin || entry.end - entry.begin != numel * dtype->bytes)
      fail_at(path, where,
              "data_offsets [" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                  ") do not match shape and dtype (" + std::to_string(numel * dtype->bytes) +
                  " bytes)");
    if (entry.end > data_size)
      fail_at(path, where,
              "data ends at byte " + std::to_string(entry.end) + " but the data section has " +
                  std::to_string(data_size) + " bytes (truncated file)");
    ranges.emplace_back(entry.begin, entry.end, name);
    out.tensors.emplace(name, std::move(entry));
  }
  // The format's rule (and the reference reader's): the tensors tile the data section, with
  // neither overlaps, which would let one tensor's bytes pass for another's, nor gaps.
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

void open_index(SafetensorsCheckpoint& out, const std::string& index_path) {
  std::ifstream in(index_path);
  if (!in) fail_at(index_path, "", "cannot open");
  json index;
  try {
    in >> index;
  } catch (const json::parse_error& e) {
    fail_at(index_path, "byte " + std::to_string(e.byte), "invalid JSON");
  } catch (const json::exception& e) {  // a number past every type: out_of_range
    fail_at(index_path, "", std::string("invalid JSON: ") + e.what());
  }
  if (!index.contains("weight_map") || !index["weight_map"].is_object())
    fail_at(index_path, "field 'weight_map'", "missing or not an object");
  std::map<std::string, std::string> owner;  // tensor -> shard file name
  for (auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string())
      fail_at(index_path, "weight_map['" + name + "']", "expected a file name");
    owner[name] = shard.get<std::string>();
  }
  const fs::path dir = fs::path(index_path).parent_path();
  std::set<std::string> shards;
  for (auto& [name, shard] : owner) shards.insert(shard);
  for (const auto& shard : shards) add_file(out, (dir / shard).string());
  for (auto& [name, shard] : owner) {
    auto it = out.tensors.find(name);
    if (it == out.tensors.end())
      fail_at((dir / shard).string(), "tensor '" + name + "'",
              "listed in " + index_path + " but missing from the shard");
    if (fs::path(it->second.file).filename() != shard)
      fail_at(index_path, "tensor '" + name + "'",
              "index names " + shard + " but it is stored in " + it->second.file);
  }
  for (auto& [name, entry] : out.tensors)
    if (!owner.count(name))
      fail_at(entry.file, "tensor '" + name + "'",
              "present in the shard but not listed in " + index_path);
}

}  // namespace

torch::Tensor SafetensorsCheckpoint::get(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) fail_at(location, "tensor '" + name + "'", "missing");
  const TensorEntry& e = it->second;
  const DtypeInfo* dtype = dtype_by_name(e.dtype);
  auto mapping = e.mapping;
  char* data = const_cast<char*>(mapping->data) + e.section + e.begin;
  // The deleter holds the mapping alive for as long as any view of it exists.
  return torch::from_blob(
      data, e.shape, [mapping](void*) {}, torch::TensorOptions().dtype(dtype->type));
}

std::vector<std::string> SafetensorsCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : tensors) out.push_back(name);
  return out;
}

SafetensorsCheckpoint open_safetensors(const std::string& path) {
  SafetensorsCheckpoint out;
  out.location = path;
  fs::path p(path);
  if (fs::is_directory(p)) {
    if (fs::exists(p / "model.safetensors.index.json"))
      open_index(out, (p / "model.safetensors.index.json").string());
    else if (fs::exists(p / "model.safetensors"))
      add_file(out, (p / "model.safetensors").string());
    else
      fail_at(path, "", "no model.safetensors or model.safetensors.index.json in this directory");
  } else if (p.extension() == ".json") {
    open_index(out, path);
  } else {
    add_file(out, path);
  }
  return out;
}

namespace {

// The length prefix and JSON header of a file holding `specs` in order, padded so that the data
// section starts 8-byte aligned. `bytes_of` receives each tensor's byte count.
std::string header_bytes(const std::vector<SafetensorsSpec>& specs,
                         const std::map<std::string, std::string>& metadata,
                         const std::string& path, std::vector<size_t>& bytes_of) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  size_t offset = 0;
  bytes_of.clear();
  for (const auto& spec : specs) {
    if (header.contains(spec.name)) throw Error(path + ": tensor '" + spec.name + "' given twice");
    const DtypeInfo& dtype = dtype_by_type(spec.dtype, spec.name);
    size_t bytes = dtype.bytes;
    for (int64_t d : spec.shape) bytes *= static_cast<size_t>(d);
    header[spec.name] = {
        {"dtype", dtype.name}, {"shape", spec.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    bytes_of.push_back(bytes);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
  const uint64_t len = text.size();
  return std::string(reinterpret_cast<const char*>(&len), 8) + text;
}

std::vector<SafetensorsSpec> specs_of(
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  std::vector<SafetensorsSpec> specs;
  for (const auto& [name, tensor] : tensors)
    specs.push_back({name, tensor.scalar_type(), tensor.sizes().vec()});
  return specs;
}

// `tensor` on the CPU and contiguous, checked against the spec the header promised for it.
torch::Tensor as_written(const torch::Tensor& tensor, const SafetensorsSpec& spec, size_t bytes,
                         const std::string& path) {
  torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
  if (t.scalar_type() != spec.dtype || t.sizes().vec() != spec.shape || t.nbytes() != bytes)
    throw Error(path + ": tensor '" + spec.name + "' is not the dtype and shape its header says");
  return t;
}

}  // namespace

std::string serialize_safetensors(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata,
                                  const std::string& path) {
  const auto specs = specs_of(tensors);
  std::vector<size_t> bytes_of;
  std::string bytes = header_bytes(specs, metadata, path, bytes_of);
  for (size_t i = 0; i < specs.size(); ++i) {
    const torch::Tensor t = as_written(tensors[i].second, specs[i], bytes_of[i], path);
    bytes.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  return bytes;
}

void write_safetensors_streamed(const std::string& path, const std::vector<SafetensorsSpec>& specs,
                                const std::function<torch::Tensor(size_t)>& make,
                                const std::map<std::string, std::string>& metadata) {
  std::vector<size_t> bytes_of;
  const std::string header = header_bytes(specs, metadata, path, bytes_of);
  AtomicFileWriter out(path);
  out.write(header.data(), header.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const torch::Tensor t = as_written(make(i), specs[i], bytes_of[i], path);
    out.write(t.data_ptr(), t.nbytes());
  }
  out.commit();
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_safetensors_streamed(
      path, specs_of(tensors), [&](size_t i) { return tensors[i].second; }, metadata);
}

}  // namespace citeforge::models
