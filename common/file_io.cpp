#include "common/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace citeforge {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_at(path, "", "cannot open for reading");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail_at(tmp, "", std::string("cannot create: ") + std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fail_at(tmp, "", std::string("write failed: ") + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) fail_at(tmp, "", "fsync/close failed");
  fs::rename(tmp, target);
}

}  // namespace citeforge

namespace citeforge {

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

void fsync_directory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail_at(path, "", std::string("cannot open directory: ") + std::strerror(errno));
  ::fsync(fd);
  ::close(fd);
}

void append_jsonl(const std::string& path, const std::string& json_line) {
  FILE* f = std::fopen(path.c_str(), "a");
  if (!f) fail_at(path, "", "cannot open for appending");
  std::fputs(json_line.c_str(), f);
  std::fputc('\n', f);
  std::fflush(f);
  std::fclose(f);
}

}  // namespace citeforge
