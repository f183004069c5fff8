// The mapped reader shared by the checkpoint formats and the writer that never leaves a torn
// file: what they promise when a file is odd or a write fails midway.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/file_io.h"
#include "common/mapped_file.h"
#include "tests/support/test_paths.h"

using namespace citeforge;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

TEST_CASE("a mapped file reads its bytes, before and after its pages are handed back",
          "[common][mapped_file]") {
  const auto dir = testing::temp_dir("mapped_file");
  const std::string text(3 * 4096 + 17, 'x');
  std::ofstream(dir / "f.bin", std::ios::binary) << text;
  auto file = map_file((dir / "f.bin").string());
  CHECK(file->bytes() == text);
  release_pages(*file, 0, file->size);
  release_pages(*file, 5, 7);  // less than a page: nothing to drop
  CHECK(file->bytes() == text);

  std::ofstream(dir / "empty.bin");
  CHECK(map_file((dir / "empty.bin").string())->bytes().empty());
  CHECK_THROWS_WITH(map_file(dir.string()),
                    Contains(dir.string()) && Contains("not a regular file"));
  CHECK_THROWS_WITH(map_file((dir / "absent").string()),
                    Contains("absent") && Contains("cannot open"));
}

TEST_CASE("a file written in pieces appears whole at commit, and not at all without it",
          "[common][file_io]") {
  const auto dir = testing::temp_dir("atomic_writer");
  const auto path = (dir / "out.bin").string();
  {
    AtomicFileWriter out(path);
    out.write("abc", 3);
    CHECK_FALSE(fs::exists(path));
    out.write("def", 3);
    out.commit();
  }
  CHECK(read_file(path) == "abcdef");
  {
    AtomicFileWriter out(path);
    out.write("half", 4);
    // destroyed without commit: an error on the way
  }
  CHECK(read_file(path) == "abcdef");
  for (const auto& entry : fs::directory_iterator(dir))
    CHECK(entry.path().filename() == "out.bin");  // no temporary file left
}
