// The HDF5 evaluation archive: an exact round trip, and clear errors for broken files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <string>

#include "common/error.h"
#include "common/file_io.h"
#include "tests/support/test_paths.h"
#include "trainer/eval/eval_archive.h"
#include "trainer/run/run_dir.h"

using namespace citeforge;
using namespace citeforge::trainer;
using Catch::Matchers::Contains;

TEST_CASE("an evaluation archive reads back exactly as written", "[trainer][archive]") {
  EvalRecord record;
  record.stage = "sft+ppo";
  record.epoch = 3;
  record.test_set = "test_ood";
  record.checkpoint = "checkpoints/sft+ppo-3";
  record.ids = {"a", "b"};
  record.prompts = {"Question: x?\nAnswer:", "ünïcödé prompt"};
  record.generations = {"It is y [1][2].", ""};
  record.metrics = {{"f1", {1.0, 0.0}}, {"answer_length", {4, 0}}};
  record.aggregates = {{"f1", {0.5, 2, 0.0, 1.0}}, {"answer_length", {2, 2, 0, 4}}};
  auto path =
      trainer::RunDir{testing::temp_dir("archive").string()}.eval_archive("sft+ppo", 3, "test_ood");
  CHECK(path.find("eval/sft+ppo-3/test_ood.h5") != std::string::npos);
  write_eval_archive(path, record);
  auto back = read_eval_archive(path);
  CHECK(back.stage == record.stage);
  CHECK(back.epoch == 3);
  CHECK(back.checkpoint == record.checkpoint);
  CHECK(back.prompts == record.prompts);
  CHECK(back.generations == record.generations);
  CHECK(back.metrics == record.metrics);
  REQUIRE(back.aggregates.size() == 2);
  CHECK(back.aggregates[1].first == "answer_length");
  CHECK(back.aggregates[1].second.ci_high == 4);
}

TEST_CASE("broken evaluation archives are named errors", "[trainer][archive][errors]") {
  auto dir = testing::temp_dir("archive-bad");
  auto not_hdf5 = (dir / "x.h5").string();
  write_file_atomically(not_hdf5, "plain text");
  CHECK_THROWS_WITH(read_eval_archive(not_hdf5), Contains("x.h5"));
  CHECK_THROWS_WITH(read_eval_archive((dir / "missing.h5").string()), Contains("missing.h5"));
  EvalRecord bad;
  bad.stage = "dpo";
  bad.test_set = "t";
  CHECK_THROWS_WITH(write_eval_archive((dir / "bad.h5").string(), bad), Contains("dpo"));
  bad.stage = "sft";
  bad.test_set = "../escape";
  CHECK_THROWS_AS(write_eval_archive((dir / "bad.h5").string(), bad), citeforge::Error);
  CHECK_FALSE(std::filesystem::exists(dir / "bad.h5"));
}

TEST_CASE("a corrupted evaluation archive reads as itself or as one named error, never a crash",
          "[trainer][archive][errors]") {
  // Bytes flipped anywhere in a real archive: libhdf5 follows corrupted heap addresses into
  // SIGSEGV on some of these, which must reach the caller as an Error naming the file.
  EvalRecord record;
  record.stage = "sft";
  record.epoch = 1;
  record.test_set = "test";
  record.checkpoint = "checkpoints/sft-1";
  for (int i = 0; i < 40; ++i) {
    record.ids.push_back("q" + std::to_string(i));
    record.prompts.push_back("Question " + std::to_string(i) + ": which source says so?");
    record.generations.push_back("It does [" + std::to_string(i % 5 + 1) + "].");
  }
  record.metrics = {{"f1", std::vector<double>(40, 0.5)}};
  record.aggregates = {{"f1", {0.5, 40, 0.5, 0.5}}};
  const auto dir = testing::temp_dir("archive-corrupt");
  const auto good = (dir / "good.h5").string();
  write_eval_archive(good, record);
  const std::string bytes = read_file(good);
  std::mt19937 rng(7);
  int read_back = 0, refused = 0;
  for (int variant = 0; variant < 40; ++variant) {
    std::string damaged = bytes;
    for (int k = 0; k < 40; ++k)
      damaged[rng() % damaged.size()] ^= static_cast<char>(1 + rng() % 255);
    const auto path = (dir / ("v" + std::to_string(variant) + ".h5")).string();
    write_file_atomically(path, damaged);
    try {
      read_eval_archive(path);
      ++read_back;
    } catch (const citeforge::Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(path) != std::string::npos);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      ++refused;
    }
  }
  CHECK(read_back + refused == 40);
  CHECK(refused > 0);
}
