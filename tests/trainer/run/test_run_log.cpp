// The run log writes every record to metrics.jsonl and its numbers to the stage's event file,
// which opens with the file version and the config; a resume appends the START that hides the
// killed process's steps; logging.tensorboard off leaves metrics.jsonl alone. TensorBoard's own
// reader checks a whole killed-and-resumed run: scripts/check_tensorboard.py --make-run.
#include <catch2/catch.hpp>
#include <filesystem>

#include "common/file_io.h"
#include "tests/support/test_paths.h"
#include "trainer/run/run_log.h"

using namespace citeforge;
namespace fs = std::filesystem;

namespace {

std::string only_event_file(const std::string& dir) {
  std::vector<fs::path> files{fs::directory_iterator(dir), fs::directory_iterator()};
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().find("events.out.tfevents.") == 0);
  return read_file(files[0].string());
}

}  // namespace

TEST_CASE("the run log writes metrics.jsonl and the stage's event file", "[trainer][tensorboard]") {
  const auto dir = testing::temp_dir("run_log").string();
  const trainer::RunLog log{dir, true, "name: demo\n"};
  trainer::log_record(log, {{"stage", "sft"}, {"step", 3}, {"loss", 1.5}, {"note", "text"}});
  trainer::log_record(log, {{"stage", "ppo"}, {"iteration", 2}, {"kl", {{"k3", 0.25}}}});
  trainer::log_resume(log, {{"stage", "sft"}, {"event", "resume"}, {"step", 2}}, 3);
  trainer::log_evaluation(log, "sft", 1, "test", {{"f1", {0.5, 10, 0.25, 0.75}}});

  const auto lines = read_file(dir + "/metrics.jsonl");
  CHECK(lines.find(R"("loss":1.5)") != std::string::npos);
  CHECK(lines.find(R"("event":"resume")") != std::string::npos);

  const auto sft = only_event_file(trainer::tensorboard_dir(dir, "sft"));
  CHECK(sft.find("brain.Event:2") != std::string::npos);  // the file version opens it
  CHECK(sft.find("name: demo") != std::string::npos);     // the config, as text
  CHECK(sft.find("loss") != std::string::npos);
  CHECK(sft.find("note") == std::string::npos);  // strings stay in metrics.jsonl
  CHECK(sft.find("resumed: steps from 3") != std::string::npos);
  CHECK(sft.find("eval/test/f1/ci_high") != std::string::npos);
  CHECK(only_event_file(trainer::tensorboard_dir(dir, "ppo")).find("kl/k3") != std::string::npos);

  // A record without a step cannot be placed on TensorBoard's axis.
  CHECK_THROWS(trainer::log_record(log, {{"stage", "sft"}, {"loss", 1.0}}));
}

TEST_CASE("logging.tensorboard off writes metrics.jsonl only", "[trainer][tensorboard]") {
  const auto dir = testing::temp_dir("run_log_off").string();
  const trainer::RunLog log{dir, false, ""};
  trainer::log_record(log, {{"stage", "sft"}, {"step", 1}, {"loss", 2.0}});
  trainer::log_evaluation(log, "sft", 1, "test", {{"f1", {0.5, 10, 0.25, 0.75}}});
  CHECK(fs::exists(dir + "/metrics.jsonl"));
  CHECK_FALSE(fs::exists(dir + "/tensorboard"));
}
