#include "trainer/run/run_log.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>

#include "common/error.h"
#include "common/event_file.h"
#include "common/file_io.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

namespace {

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// This process's event file of a stage: made, with the file version and the config, at its
// first use. TensorBoard reads a directory's files in name order, so a resumed run's new file
// (a later time in its name) comes after the killed one's.
std::string event_file(const RunLog& log, const std::string& stage) {
  static std::mutex mutex;
  static std::map<std::string, std::string> files;  // stage directory -> this process's file
  const std::string dir = tensorboard_dir(log.run_dir, stage);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = files.find(dir); it != files.end()) return it->second;
  fs::create_directories(dir);
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const double now = wall_time();
  const std::string path = dir + "/events.out.tfevents." +
                           std::to_string(static_cast<int64_t>(now)) + "." + host + "." +
                           std::to_string(::getpid()) + ".citeforge";
  std::vector<std::string> opening{file_version_event(now)};
  if (!log.config_yaml.empty())
    opening.push_back(text_event(now, 0, "config", "```yaml\n" + log.config_yaml + "```\n"));
  append_event_records(path, opening);
  files[dir] = path;
  return path;
}

void flatten(const nlohmann::json& value, const std::string& tag,
             std::vector<std::pair<std::string, double>>& out) {
  if (value.is_number()) {
    out.emplace_back(tag, value.get<double>());
  } else if (value.is_object()) {
    for (const auto& [key, inner] : value.items()) flatten(inner, tag + "/" + key, out);
  }
}

int64_t step_of(const nlohmann::json& record) {
  for (const char* key : {"step", "iteration"})
    if (record.contains(key) && record[key].is_number_integer()) return record[key].get<int64_t>();
  throw Error("run log: a metrics record without a step or iteration: " + record.dump());
}

}  // namespace

std::string tensorboard_dir(const std::string& run_dir, const std::string& stage) {
  return RunDir{run_dir}.path("tensorboard/" + stage);
}

void log_record(const RunLog& log, const nlohmann::json& record) {
  append_jsonl(RunDir{log.run_dir}.metrics(), record.dump());
  if (!log.tensorboard) return;
  const std::string stage = record.at("stage").get<std::string>();
  const int64_t step = step_of(record);
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [key, value] : record.items())
    if (key != "stage" && key != "step" && key != "iteration") flatten(value, key, scalars);
  if (scalars.empty()) return;
  append_event_records(event_file(log, stage), {scalars_event(wall_time(), step, scalars)});
}

void log_resume(const RunLog& log, const nlohmann::json& record, int64_t first_repeated) {
  append_jsonl(RunDir{log.run_dir}.metrics(), record.dump());
  if (!log.tensorboard) return;
  const std::string stage = record.at("stage").get<std::string>();
  append_event_records(event_file(log, stage),
                       {session_start_event(wall_time(), first_repeated,
                                            "resumed: steps from " +
                                                std::to_string(first_repeated) + " are redone")});
}

void log_evaluation(const RunLog& log, const std::string& stage, int epoch,
                    const std::string& test_set,
                    const std::vector<std::pair<std::string, rewards::Aggregate>>& metrics) {
  if (!log.tensorboard) return;
  std::vector<std::pair<std::string, double>> scalars;
  const std::string prefix = "eval/" + test_set + "/";
  for (const auto& [name, a] : metrics) {
    if (std::isnan(a.mean)) continue;
    scalars.emplace_back(prefix + name, a.mean);
    if (!std::isnan(a.ci_low)) scalars.emplace_back(prefix + name + "/ci_low", a.ci_low);
    if (!std::isnan(a.ci_high)) scalars.emplace_back(prefix + name + "/ci_high", a.ci_high);
  }
  if (scalars.empty()) return;
  append_event_records(event_file(log, stage), {scalars_event(wall_time(), epoch, scalars)});
}

}  // namespace citeforge::trainer
