// Where tests find their inputs: the repository (fixtures) and the project's shared/ folder
// (real models and data), which CTest passes as CITEFORGE_SHARED.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace citeforge::testing {

#ifndef CITEFORGE_SOURCE_DIR
#define CITEFORGE_SOURCE_DIR "."
#endif

inline std::string source_path(const std::string& relative) {
  return (std::filesystem::path(CITEFORGE_SOURCE_DIR) / relative).string();
}

inline std::string shared_path(const std::string& relative) {
  const char* env = std::getenv("CITEFORGE_SHARED");
  std::filesystem::path root =
      env ? env : std::filesystem::path(CITEFORGE_SOURCE_DIR) / ".." / "shared";
  return (root / relative).string();
}

// A fresh empty directory under the system temp dir, unique per call.
std::filesystem::path temp_dir(const std::string& tag);

}  // namespace citeforge::testing
