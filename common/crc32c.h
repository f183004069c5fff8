// CRC-32C (Castagnoli), the checksum TensorBoard's event files (TFRecord framing) carry, and the
// masked form they store. Table-driven: event files are small, and no Debian package ships a
// CRC-32C library.
#pragma once

#include <cstddef>
#include <cstdint>

namespace citeforge {

uint32_t crc32c(const void* data, std::size_t size);
// TFRecord's mask: a rotation plus a constant, so a CRC of data holding CRCs stays meaningful.
uint32_t masked_crc32c(const void* data, std::size_t size);

}  // namespace citeforge
