#include "common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace citeforge {

MappedFile::~MappedFile() {
  if (data) ::munmap(const_cast<char*>(data), size);
}

std::shared_ptr<const MappedFile> map_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail_at(path, "", std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    fail_at(path, "", "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_at(path, "", "not a regular file");
  }
  auto file = std::make_shared<MappedFile>();
  file->path = path;
  file->size = static_cast<size_t>(st.st_size);
  if (file->size > 0) {
    void* base = ::mmap(nullptr, file->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      ::close(fd);
      fail_at(path, "", std::string("cannot map: ") + std::strerror(errno));
    }
    file->data = static_cast<const char*>(base);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return file;
}

void release_pages(const MappedFile& file, size_t begin, size_t end) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t first = (begin + page - 1) / page * page;
  const size_t last = std::min(end, file.size) / page * page;
  if (!file.data || first >= last) return;
  // A read-only private mapping never holds changed pages, so dropping them loses nothing.
  ::madvise(const_cast<char*>(file.data) + first, last - first, MADV_DONTNEED);
}

}  // namespace citeforge
