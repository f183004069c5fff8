// JSON Lines: one JSON value per line, blank lines skipped. The one reader every JSONL file of
// citeforge goes through (examples, answers, RAGE/BEIR records), so they agree on line numbers,
// blank lines, CRLF endings and how a line that is not JSON is reported.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace citeforge::data {

// Calls `visit(line, value)` for every non-blank line of `text` (the contents of `path`), with
// its 1-based line number. A line that is not JSON is an Error "PATH: line N: invalid JSON: ...".
void for_each_jsonl_line(const std::string& path, const std::string& text,
                         const std::function<void(std::size_t line, nlohmann::json& value)>& visit);

}  // namespace citeforge::data
