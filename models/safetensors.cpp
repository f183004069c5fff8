#include "models/safetensors.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "common/file_io.h"
#include "models/safetensors_header.h"

namespace citeforge::models {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Each safetensors dtype's LibTorch type (its size in bytes: safetensors_header.h).
struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
};

constexpr DtypeInfo kDtypes[] = {
    {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
    {"F64", torch::kFloat64}, {"I64", torch::kInt64},   {"I32", torch::kInt32},
    {"I16", torch::kInt16},   {"I8", torch::kInt8},     {"U8", torch::kUInt8},
    {"BOOL", torch::kBool},
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

// Parses one file's header (safetensors_header.h) and adds its tensors to `out`.
void add_file(SafetensorsCheckpoint& out, const std::string& path) {
  auto file = map_file(path);
  const auto header = parse_safetensors_header(std::string_view(file->data, file->size), path);
  if (out.metadata.empty()) out.metadata = header.metadata;
  for (const auto& t : header.tensors) {
    if (out.tensors.count(t.name))
      fail_at(path, "tensor '" + t.name + "'", "appears in more than one file");
    TensorEntry entry;
    entry.file = path;
    entry.dtype = t.dtype;
    entry.shape = t.shape;
    entry.begin = t.begin;
    entry.end = t.end;
    entry.section = header.section;
    entry.mapping = file;
    out.tensors.emplace(t.name, std::move(entry));
  }
}

void open_index(SafetensorsCheckpoint& out, const std::string& index_path) {
  if (!fs::exists(index_path)) fail_at(index_path, "", "cannot open");
  const std::map<std::string, std::string> owner =
      parse_safetensors_index(read_file(index_path), index_path);
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
    size_t bytes = safetensors_dtype_bytes(dtype.name);
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
