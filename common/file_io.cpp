#include "common/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/error.h"

namespace citeforge {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_at(path, "", "cannot open for reading");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

AtomicFileWriter::AtomicFileWriter(std::string target) : path(std::move(target)) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  temp = path + ".tmp." + std::to_string(getpid());
  fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail_at(temp, "", std::string("cannot create: ") + std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (committed) return;
  if (fd >= 0) ::close(fd);
  ::unlink(temp.c_str());
}

void AtomicFileWriter::write(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, bytes + written, size - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_at(temp, "", std::string("write failed: ") + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  const int closing = fd;
  fd = -1;
  if (::fsync(closing) != 0) {
    ::close(closing);
    fail_at(temp, "", std::string("fsync failed: ") + std::strerror(errno));
  }
  if (::close(closing) != 0)
    fail_at(temp, "", std::string("close failed: ") + std::strerror(errno));
  std::filesystem::rename(temp, path);
  committed = true;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  AtomicFileWriter out(path);
  out.write(bytes.data(), bytes.size());
  out.commit();
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
