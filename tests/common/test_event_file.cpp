// CRC-32C against its published check values, and the TFRecord framing of event records. That
// TensorBoard reads the events is checked by its own reader (scripts/check_tensorboard.py).
#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "common/crc32c.h"
#include "common/event_file.h"

using namespace citeforge;

TEST_CASE("crc32c gives the published check values", "[common][tensorboard]") {
  const std::string digits = "123456789";
  CHECK(crc32c(digits.data(), digits.size()) == 0xE3069283u);  // the CRC catalogue's check
  const std::string zeros(32, '\0'), ones(32, '\xff');
  CHECK(crc32c(zeros.data(), zeros.size()) == 0x8A9136AAu);  // RFC 3720, B.4
  CHECK(crc32c(ones.data(), ones.size()) == 0x62A8AB43u);
  CHECK(crc32c(nullptr, 0) == 0u);
  // The mask is a rotation by 15 bits plus 0xa282ead8.
  const uint32_t c = 0xE3069283u;
  CHECK(masked_crc32c(digits.data(), digits.size()) == ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

TEST_CASE("an event record is length, its checksum, the event and its checksum",
          "[common][tensorboard]") {
  const std::string event = scalars_event(1.5, 300, {{"loss", 0.25}});
  const std::string record = event_record(event);
  REQUIRE(record.size() == 8 + 4 + event.size() + 4);
  uint64_t length = 0;
  std::memcpy(&length, record.data(), 8);
  CHECK(length == event.size());
  uint32_t length_crc = 0, data_crc = 0;
  std::memcpy(&length_crc, record.data() + 8, 4);
  std::memcpy(&data_crc, record.data() + 12 + event.size(), 4);
  CHECK(length_crc == masked_crc32c(record.data(), 8));
  CHECK(data_crc == masked_crc32c(event.data(), event.size()));
  CHECK(record.substr(12, event.size()) == event);
  // Field 1 (wall_time, fixed64 1.5), field 2 (step, varint 300 = 0xac 0x02), then the summary.
  double wall = 0;
  std::memcpy(&wall, event.data() + 1, 8);
  CHECK(static_cast<unsigned char>(event[0]) == 0x09);
  CHECK(wall == 1.5);
  CHECK(event.substr(9, 3) == std::string("\x10\xac\x02", 3));
  CHECK(event.find("loss") != std::string::npos);
}

TEST_CASE("a session START is Event field 7 holding status 1", "[common][tensorboard]") {
  // Field 6 is the deprecated log_message: a START there is silently ignored by TensorBoard and
  // a resumed run's orphaned steps stay visible (scripts/check_tensorboard.py found it so).
  const std::string event = session_start_event(2.0, 5, "m");
  // wall_time (9 bytes) and step (2), then key 7 << 3 | 2 = 0x3a, the length, status 1, msg.
  CHECK(event.substr(11) == std::string("\x3a\x05\x08\x01\x1a\x01m", 7));
}
