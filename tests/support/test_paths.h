// Where tests find their inputs, all inside the repository: fixtures (small real and reference
// models, tokenizers) under tests/fixtures/, and the shipped data sets under datasets/.
#pragma once

#include <filesystem>
#include <string>

namespace citeforge::testing {

#ifndef CITEFORGE_SOURCE_DIR
#define CITEFORGE_SOURCE_DIR "."
#endif

inline std::string source_path(const std::string& relative) {
  return (std::filesystem::path(CITEFORGE_SOURCE_DIR) / relative).string();
}

inline std::string fixture_path(const std::string& relative) {
  return (std::filesystem::path(CITEFORGE_SOURCE_DIR) / "tests" / "fixtures" / relative).string();
}

inline std::string dataset_path(const std::string& relative) {
  return (std::filesystem::path(CITEFORGE_SOURCE_DIR) / "datasets" / relative).string();
}

// A fresh empty directory under the system temp dir, unique per call.
std::filesystem::path temp_dir(const std::string& tag);

}  // namespace citeforge::testing
