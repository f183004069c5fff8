#include "data/jsonl.h"

#include "common/error.h"

namespace citeforge::data {

void for_each_jsonl_line(
    const std::string& path, const std::string& text,
    const std::function<void(std::size_t line, nlohmann::json& value)>& visit) {
  std::size_t line = 0, begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string row = text.substr(begin, end - begin);
    begin = end + 1;
    ++line;
    if (!row.empty() && row.back() == '\r') row.pop_back();
    if (row.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json value;
    // Any of the JSON library's errors (a number past every integer type is out_of_range, not
    // a parse_error; a field of the wrong type in the visitor is a type_error) is one line naming
    // the file and the line.
    try {
      value = nlohmann::json::parse(row);
    } catch (const nlohmann::json::exception& e) {
      fail_at(path, "line " + std::to_string(line), std::string("invalid JSON: ") + e.what());
    }
    try {
      visit(line, value);
    } catch (const nlohmann::json::exception& e) {
      fail_at(path, "line " + std::to_string(line),
              std::string("a field has the wrong type: ") + e.what());
    }
  }
}

}  // namespace citeforge::data
