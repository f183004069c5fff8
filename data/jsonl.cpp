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
    try {
      value = nlohmann::json::parse(row);
    } catch (const nlohmann::json::parse_error& e) {
      fail_at(path, "line " + std::to_string(line), std::string("invalid JSON: ") + e.what());
    }
    visit(line, value);
  }
}

}  // namespace citeforge::data
