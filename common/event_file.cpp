#include "common/event_file.h"

#include <cstdio>
#include <cstring>

#include "common/crc32c.h"
#include "common/error.h"

namespace citeforge {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5;

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

void key(std::string& out, int field, int wire_type) {
  varint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

void bytes_field(std::string& out, int field, const std::string& bytes) {
  key(out, field, kBytes);
  varint(out, bytes.size());
  out += bytes;
}

template <typename T>
void little_endian(std::string& out, T value) {
  unsigned char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));  // x86-64 and aarch64 are little-endian
  out.append(reinterpret_cast<const char*>(raw), sizeof(T));
}

std::string event_head(double wall_time, int64_t step) {
  std::string event;
  key(event, 1, kFixed64);
  little_endian(event, wall_time);
  key(event, 2, kVarint);
  varint(event, static_cast<uint64_t>(step));
  return event;
}

}  // namespace

std::string file_version_event(double wall_time) {
  std::string event = event_head(wall_time, 0);
  bytes_field(event, 3, "brain.Event:2");
  return event;
}

std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, double>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    bytes_field(v, 1, tag);
    key(v, 2, kFixed32);
    little_endian(v, static_cast<float>(value));
    bytes_field(summary, 1, v);
  }
  std::string event = event_head(wall_time, step);
  bytes_field(event, 5, summary);
  return event;
}

std::string text_event(double wall_time, int64_t step, const std::string& tag,
                       const std::string& text) {
  std::string plugin, metadata, tensor, v, summary;
  bytes_field(plugin, 1, "text");
  bytes_field(metadata, 1, plugin);
  key(tensor, 1, kVarint);
  varint(tensor, 7);           // DT_STRING
  bytes_field(tensor, 2, "");  // a scalar's shape: no dimensions
  bytes_field(tensor, 8, text);
  bytes_field(v, 1, tag);
  bytes_field(v, 8, tensor);
  bytes_field(v, 9, metadata);
  bytes_field(summary, 1, v);
  std::string event = event_head(wall_time, step);
  bytes_field(event, 5, summary);
  return event;
}

std::string session_start_event(double wall_time, int64_t step, const std::string& message) {
  std::string log;
  key(log, 1, kVarint);
  varint(log, 1);  // START
  bytes_field(log, 3, message);
  std::string event = event_head(wall_time, step);
  bytes_field(event, 7, log);
  return event;
}

std::string event_record(const std::string& event) {
  std::string record;
  const uint64_t length = event.size();
  little_endian(record, length);
  little_endian(record, masked_crc32c(record.data(), sizeof length));
  record += event;
  little_endian(record, masked_crc32c(event.data(), event.size()));
  return record;
}

void append_event_records(const std::string& path, const std::vector<std::string>& events) {
  std::string bytes;
  for (const auto& e : events) bytes += event_record(e);
  FILE* f = std::fopen(path.c_str(), "ab");
  if (!f) fail_at(path, "", "cannot open for appending");
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) fail_at(path, "", "cannot write the event records");
}

}  // namespace citeforge
