// Answers of an evaluation in progress, kept batch by batch next to its archive
// (RUN_DIR/eval/<stage>-<epoch>/<test set>.partial.jsonl), so a run killed in the middle of a
// test set resumes at the next unanswered example instead of generating the whole set again.
// One {"index": i, "id": "...", "answer": "..."} per line ("answer_hex" instead for an answer
// that is not valid UTF-8); the file is removed once the archive is written.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "data/example.h"

namespace citeforge::trainer {

// ARCHIVE without its ".h5", plus ".partial.jsonl".
std::string partial_answers_path(const std::string& archive_path);

// The answers recorded so far, by position in `examples`. A missing file is an empty map. A
// last line without its newline (the process died while writing it) is dropped with a warning.
// A line whose index is out of range or whose id is not the example's at that index (the test
// set changed since) is citeforge::Error naming the file, the line and the field.
std::map<std::size_t, std::string> read_partial_answers(const std::string& path,
                                                        const std::vector<data::Example>& examples);

// Appends one answer and flushes it.
void append_partial_answer(const std::string& path, std::size_t index, const std::string& id,
                           const std::string& answer);

}  // namespace citeforge::trainer
