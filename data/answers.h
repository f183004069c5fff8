// Answers to score (docs/design.md §6): JSONL, one {"id": ..., "answer": "..."} per line.
#pragma once

#include <map>
#include <string>

namespace citeforge::data {

// Answers by example id. Errors name the file, the line and the field: invalid JSON, a missing
// or non-string "id" / "answer", an unknown field, a duplicate id.
std::map<std::string, std::string> read_answers_jsonl(const std::string& path);

// Writes answers in the same format, in id order.
void write_answers_jsonl(const std::string& path,
                         const std::map<std::string, std::string>& answers);

}  // namespace citeforge::data
