#include "common/abandoned_work.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>

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

}  // namespace citeforge
