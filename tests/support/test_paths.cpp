#include "tests/support/test_paths.h"

#include <unistd.h>

#include <atomic>

namespace citeforge::testing {

std::filesystem::path temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  auto dir =
      std::filesystem::temp_directory_path() /
      ("citeforge-test-" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace citeforge::testing
