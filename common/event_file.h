// TensorBoard event files, written without TensorFlow or a protobuf runtime: each record is
// TFRecord framing (little-endian uint64 length, masked CRC-32C of the length, the bytes, masked
// CRC-32C of the bytes) around a serialised tensorflow.Event, whose few fields used here are
// encoded by hand in protobuf's wire format. The PyPI wheel of LibTorch exports its own copy of
// protobuf's symbols, so a second protobuf runtime in the same process would bind some calls to
// the other's copy (the failure `std_bindings` guards against for libstdc++); the messages needed
// are small, and TensorBoard's own reader checks the result (scripts/check_tensorboard.py).
//
// Messages and field numbers (tensorflow/core/util/event.proto, framework/summary.proto):
//   Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
//           SessionLog session_log = 7; }   (6 is the deprecated log_message)
//   Summary { repeated Value value = 1; }
//   Value { string tag = 1; float simple_value = 2; TensorProto tensor = 8;
//           SummaryMetadata metadata = 9; }
//   SummaryMetadata { PluginData plugin_data = 1; }   PluginData { string plugin_name = 1; }
//   TensorProto { DataType dtype = 1 (DT_STRING = 7); TensorShapeProto tensor_shape = 2;
//                 repeated bytes string_val = 8; }
//   SessionLog { SessionStatus status = 1 (START = 1); string msg = 3; }
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace citeforge {

// The serialised Event that opens every event file ("brain.Event:2").
std::string file_version_event(double wall_time);
// Scalars at one step: tags and values (float32, as TensorBoard keeps them).
std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, double>>& scalars);
// A text summary (TensorBoard's text plugin renders it as Markdown).
std::string text_event(double wall_time, int64_t step, const std::string& tag,
                       const std::string& text);
// SessionLog START at `step`: TensorBoard drops what an earlier session wrote at this step and
// after, which is how a resumed run hides the steps it repeats.
std::string session_start_event(double wall_time, int64_t step, const std::string& message);

// One TFRecord: framing and checksums around `event`.
std::string event_record(const std::string& event);
// Appends the records of `events` to `path` in one write (created when absent).
void append_event_records(const std::string& path, const std::vector<std::string>& events);

}  // namespace citeforge
