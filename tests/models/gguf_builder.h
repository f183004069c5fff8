// Builds small GGUF files byte by byte for tests, so the reader and importer are checked on
// inputs whose every byte is known (and on deliberately broken ones).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace citeforge::testing {

struct GgufBuilder {
  std::string header;  // magic, version, counts: written by bytes()
  std::string kv;
  std::string infos;
  std::string data;
  uint64_t kv_count = 0, tensor_count = 0;
  uint32_t version = 3;
  uint64_t alignment = 32;

  template <typename T>
  static void put(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  static void put_string(std::string& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out += s;
  }

  void key(const std::string& name, uint32_t type) {
    put_string(kv, name);
    put<uint32_t>(kv, type);
    ++kv_count;
  }
  void u32(const std::string& name, uint32_t v) { key(name, 4), put<uint32_t>(kv, v); }
  void u64(const std::string& name, uint64_t v) { key(name, 10), put<uint64_t>(kv, v); }
  void f32(const std::string& name, float v) { key(name, 6), put<float>(kv, v); }
  void boolean(const std::string& name, bool v) { key(name, 7), put<uint8_t>(kv, v ? 1 : 0); }
  void str(const std::string& name, const std::string& v) { key(name, 8), put_string(kv, v); }
  void strings(const std::string& name, const std::vector<std::string>& v) {
    key(name, 9);
    put<uint32_t>(kv, 8);
    put<uint64_t>(kv, v.size());
    for (const auto& s : v) put_string(kv, s);
  }
  void i32s(const std::string& name, const std::vector<int32_t>& v) {
    key(name, 9);
    put<uint32_t>(kv, 5);
    put<uint64_t>(kv, v.size());
    for (auto x : v) put<int32_t>(kv, x);
  }

  // Adds a tensor with ggml dims (dims[0] contiguous) and raw bytes of type `type`.
  void tensor(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
              const std::string& bytes) {
    while (data.size() % alignment) data += '\0';
    put_string(infos, name);
    put<uint32_t>(infos, dims.size());
    for (auto d : dims) put<uint64_t>(infos, d);
    put<uint32_t>(infos, type);
    put<uint64_t>(infos, data.size());
    data += bytes;
    ++tensor_count;
  }
  void f32_tensor(const std::string& name, const std::vector<uint64_t>& dims,
                  const std::vector<float>& values) {
    std::string bytes(values.size() * 4, '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());
    tensor(name, dims, 0, bytes);
  }

  std::string bytes() const {
    std::string out = "GGUF";
    put<uint32_t>(out, version);
    put<uint64_t>(out, tensor_count);
    put<uint64_t>(out, kv_count);
    out += kv;
    out += infos;
    while (out.size() % alignment) out += '\0';
    return out + data;
  }
};

}  // namespace citeforge::testing
