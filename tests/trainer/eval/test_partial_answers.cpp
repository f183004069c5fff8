// The partial answers an interrupted evaluation resumes from: what is kept, what is refused.
#include <catch2/catch.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "tests/support/test_paths.h"
#include "trainer/eval/partial_answers.h"

using namespace citeforge;
using namespace citeforge::trainer;
using Catch::Matchers::Contains;

namespace {
std::vector<data::Example> examples_with_ids(std::initializer_list<const char*> ids) {
  std::vector<data::Example> out;
  for (const char* id : ids) {
    data::Example e;
    e.id = id;
    out.push_back(e);
  }
  return out;
}
}  // namespace

TEST_CASE("partial answers round trip, bytes that are not UTF-8 included", "[trainer][eval]") {
  const auto path = (testing::temp_dir("partial") / "validation.partial.jsonl").string();
  const auto examples = examples_with_ids({"a", "b", "c"});
  CHECK(read_partial_answers(path, examples).empty());  // no file yet
  const std::string cut = "Rome [1] \xe2\x82";          // ends inside a 3-byte character
  append_partial_answer(path, 2, "c", cut);
  append_partial_answer(path, 0, "a", "Paris [2].");
  auto answers = read_partial_answers(path, examples);
  REQUIRE(answers.size() == 2);
  CHECK(answers.at(0) == "Paris [2].");
  CHECK(answers.at(2) == cut);
  CHECK(partial_answers_path("/r/eval/base-0/validation.h5") ==
        "/r/eval/base-0/validation.partial.jsonl");
}

TEST_CASE("partial answers drop a torn last line and refuse a changed test set",
          "[trainer][eval]") {
  const auto dir = testing::temp_dir("partial-bad");
  const auto path = (dir / "t.partial.jsonl").string();
  const auto examples = examples_with_ids({"a", "b"});
  write_file_atomically(path,
                        "{\"index\": 0, \"id\": \"a\", \"answer\": \"x\"}\n{\"index\": 1, \"id");
  auto answers = read_partial_answers(path, examples);
  CHECK(answers.size() == 1);

  write_file_atomically(path, "{\"index\": 1, \"id\": \"z\", \"answer\": \"x\"}\n");
  CHECK_THROWS_WITH(read_partial_answers(path, examples),
                    Contains("line 1") && Contains("\"id\"") && Contains("test set changed"));
  write_file_atomically(path, "{\"index\": 5, \"id\": \"a\", \"answer\": \"x\"}\n");
  CHECK_THROWS_WITH(read_partial_answers(path, examples),
                    Contains("line 1") && Contains("\"index\"") && Contains("outside"));
  write_file_atomically(path, "{\"index\": 0, \"id\": \"a\"}\n");
  CHECK_THROWS_WITH(read_partial_answers(path, examples), Contains("missing field \"answer\""));
  write_file_atomically(path, "{\"index\": 0, \"id\": \"a\", \"answer_hex\": \"4g\"}\n");
  CHECK_THROWS_WITH(read_partial_answers(path, examples), Contains("not a hex digit"));
}
