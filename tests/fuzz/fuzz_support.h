// What the fuzz targets share: an invariant that aborts (the fuzzer reports it like a crash)
// and, for readers that take a path, the input written to a file of this process's own.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <string>

namespace citeforge::fuzz {

inline void require(bool ok) {
  if (!ok) std::abort();
}

// Writes `size` bytes to /tmp/citeforge-fuzz-<tag>-<pid> (one file per process: libFuzzer's
// -jobs run several) and returns its path.
inline std::string input_file(const std::string& tag, const char* data, std::size_t size) {
  static const std::string pid = std::to_string(::getpid());
  const std::string path = "/tmp/citeforge-fuzz-" + tag + "-" + pid;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(data, static_cast<std::streamsize>(size));
  return path;
}

}  // namespace citeforge::fuzz
