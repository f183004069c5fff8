// A whole file mapped read-only into memory, shared by the readers of large checkpoint files
// (safetensors, GGUF): their bytes are paged in from the file on use and count as file-backed
// memory, not as the process's own, and a reader done with a range can hand its pages back.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace citeforge {

struct MappedFile {
  std::string path;
  const char* data = nullptr;
  size_t size = 0;

  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view bytes() const { return {data, size}; }
};

// Maps `path`; a missing or unreadable file is an Error naming it. An empty file maps to no
// bytes.
std::shared_ptr<const MappedFile> map_file(const std::string& path);

// Drops the resident pages of bytes [begin, end) of the mapping (whole pages inside the range
// only). Reading them again pages them back in from the file, so this only bounds memory.
void release_pages(const MappedFile& file, size_t begin, size_t end);

}  // namespace citeforge
