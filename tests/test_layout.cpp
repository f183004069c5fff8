// The repository's layout rules, checked on the source tree: the rooms of trainer/ include each
// other in one direction only (docs/design.md §1), the lower folders never include trainer/, and
// nothing points outside the repository.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "common/file_io.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {

// Height of each room: a room may include only rooms strictly lower (or itself).
const std::map<std::string, int> kRoomHeight = {
    {"config", 0}, {"run", 1}, {"eval", 2},   {"distributed", 2}, {"report", 3},
    {"sft", 4},    {"ppo", 4}, {"recipe", 5}, {"cli", 6},
};

bool is_source(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".h" || ext == ".cpp" || ext == ".cc" || ext == ".cu";
}

}  // namespace

TEST_CASE("layout: trainer's rooms include each other in one direction", "[layout]") {
  const fs::path trainer = testing::source_path("trainer");
  const std::regex include(R"re(#include "trainer/([a-z_]+)/)re");
  int checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(trainer)) {
    if (!entry.is_regular_file() || !is_source(entry.path())) continue;
    const std::string room = entry.path().parent_path().filename().string();
    INFO(entry.path().string());
    REQUIRE(kRoomHeight.count(room) == 1);  // every file sits in a known room
    const std::string text = read_file(entry.path().string());
    for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
      const std::string to = (*it)[1];
      INFO("includes trainer/" << to << "/");
      REQUIRE(kRoomHeight.count(to) == 1);
      if (to != room) CHECK(kRoomHeight.at(to) < kRoomHeight.at(room));
      ++checked;
    }
  }
  CHECK(checked > 100);
}

// Height of each top-level folder (docs/design.md §1): a folder includes only itself and folders
// strictly lower, so no two floors include each other.
const std::map<std::string, int> kFloorHeight = {
    {"common", 0},    {"data", 1},        {"models", 1},  {"rewards", 2},
    {"retrieval", 3}, {"attribution", 3}, {"trainer", 4},
};

TEST_CASE("layout: the top-level folders include each other in one direction", "[layout]") {
  const std::regex include(R"re(#include "([a-z_]+)/)re");
  int checked = 0;
  for (const auto& [from, height] : kFloorHeight) {
    for (const auto& entry : fs::recursive_directory_iterator(testing::source_path(from))) {
      if (!entry.is_regular_file() || !is_source(entry.path())) continue;
      const std::string text = read_file(entry.path().string());
      for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it) {
        const std::string to = (*it)[1];
        if (to == from || !kFloorHeight.count(to)) continue;
        INFO(entry.path().string() << " includes " << to << "/");
        CHECK(kFloorHeight.at(to) < height);
        ++checked;
      }
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("layout: common, models, data, rewards, attribution and retrieval never include trainer",
          "[layout]") {
  for (const char* folder : {"common", "models", "data", "rewards", "attribution", "retrieval"}) {
    for (const auto& entry : fs::directory_iterator(testing::source_path(folder))) {
      if (!is_source(entry.path())) continue;
      INFO(entry.path().string());
      CHECK(read_file(entry.path().string()).find("#include \"trainer/") == std::string::npos);
    }
  }
}

TEST_CASE("layout: nothing in the repository points outside it", "[layout]") {
  // Spelled in pieces so this file does not match itself.
  const std::vector<std::string> outside = {
      std::string("../") + "shared", std::string("shared") + " folder",
      std::string("CITEFORGE_") + "SHARED", std::string("DESIGN") + ".md"};
  int files = 0;
  for (const char* top :
       {"common", "models", "data", "rewards", "attribution", "retrieval", "trainer", "tests",
        "configs", "scripts", "experiments", "docs", "datasets", ".ci"}) {
    const fs::path root = testing::source_path(top);
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file() || entry.file_size() > 2'000'000) continue;
      const auto ext = entry.path().extension().string();
      if (ext == ".safetensors" || ext == ".model" || ext == ".h5" || ext == ".png") continue;
      const std::string text = read_file(entry.path().string());
      for (const auto& needle : outside) {
        INFO(entry.path().string() << " names " << needle);
        CHECK(text.find(needle) == std::string::npos);
      }
      ++files;
    }
  }
  for (const char* file : {"README.md", "CMakeLists.txt"}) {
    const std::string text = read_file(testing::source_path(file));
    for (const auto& needle : outside) {
      INFO(file << " names " << needle);
      CHECK(text.find(needle) == std::string::npos);
    }
  }
  CHECK(files > 200);
}
