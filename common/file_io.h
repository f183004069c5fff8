// Small file helpers shared by every folder.
#pragma once

#include <cstddef>
#include <string>

namespace citeforge {

// Reads a whole file; a missing or unreadable file is citeforge::Error naming it.
std::string read_file(const std::string& path);

// Writes `bytes` to `path` via a temporary file in the same directory, fsyncs it and renames it
// into place, so readers see either the old or the new content, never a torn file.
void write_file_atomically(const std::string& path, const std::string& bytes);

// The same in pieces, for files too large to hold in memory: write() appends to a temporary
// file beside `path` (PATH.tmp.PID), commit() fsyncs it and renames it into place, and a writer
// destroyed before commit() (an error on the way) removes its temporary file.
struct AtomicFileWriter {
  explicit AtomicFileWriter(std::string path);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  void write(const void* data, size_t size);
  void commit();

  std::string path, temp;
  int fd = -1;
  bool committed = false;
};

// Appends one line (a JSON record) to `path` and flushes it, so a killed run keeps every record
// written before it died.
void append_jsonl(const std::string& path, const std::string& json_line);

// True when `path` names an existing file or directory.
bool file_exists(const std::string& path);

// fsyncs a directory, so a rename into it survives a crash.
void fsync_directory(const std::string& path);

}  // namespace citeforge
