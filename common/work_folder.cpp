#include "common/work_folder.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"

namespace citeforge {

void remove_abandoned_work(const std::string& parent, const std::string& prefix,
                           void (*log)(const std::string&)) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(parent, error)) return;
  for (const auto& entry : fs::directory_iterator(parent, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const std::string pid_text = rest.substr(0, rest.find_first_not_of("0123456789"));
    if (pid_text.empty() || pid_text.size() > 9) continue;
    const pid_t pid = pid_t(std::stol(pid_text));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or unsure
    fs::remove_all(entry.path(), error);
    if (!error && log) log("removed " + entry.path().string() + ", left by a killed process");
  }
}

void make_directory_atomically(const std::string& target_path, const std::string& verb,
                               const std::function<void(const std::string& work)>& fill,
                               void (*log)(const std::string&)) {
  namespace fs = std::filesystem;
  const fs::path target = fs::absolute(target_path);
  if (fs::exists(target) && !(fs::is_directory(target) && fs::is_empty(target)))
    fail_at(target.string(), "", "output directory exists and is not empty");
  const std::string prefix = "." + target.filename().string() + "." + verb + "-";
  remove_abandoned_work(target.parent_path().string(), prefix, log);
  const fs::path work = target.parent_path() / (prefix + std::to_string(::getpid()));
  fs::remove_all(work);
  fs::create_directories(work);
  try {
    fill(work.string());
    if (fs::exists(target)) fs::remove(target);  // an empty directory, checked above
    fs::rename(work, target);
    fsync_directory(target.parent_path().string());
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(work, ignored);
    throw;
  }
}

}  // namespace citeforge
