#include "common/crc32c.h"

#include <array>

namespace citeforge {
namespace {

// The reflected polynomial 0x82F63B78, one entry per byte value.
const std::array<uint32_t, 256>& table() {
  static const std::array<uint32_t, 256> t = [] {
    std::array<uint32_t, 256> out{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      out[i] = c;
    }
    return out;
  }();
  return t;
}

}  // namespace

uint32_t crc32c(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) c = table()[(c ^ bytes[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, std::size_t size) {
  const uint32_t c = crc32c(data, size);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

}  // namespace citeforge
