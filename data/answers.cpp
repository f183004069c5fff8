#include "data/answers.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "data/jsonl.h"

namespace citeforge::data {

using nlohmann::json;

std::map<std::string, std::string> read_answers_jsonl(const std::string& path) {
  std::string content = read_file(path);
  std::map<std::string, std::string> answers;
  for_each_jsonl_line(path, content, [&](std::size_t line, json& value) {
    std::string where = "line " + std::to_string(line);
    if (!value.is_object())
      fail_at(path, where, "expected an object {\"id\": ..., \"answer\": ...}");
    for (const auto& [key, v] : value.items())
      if (key != "id" && key != "answer")
        fail_at(path, where, "field '" + key + "': unknown field");
    for (const char* field : {"id", "answer"}) {
      if (!value.contains(field))
        fail_at(path, where, std::string("field '") + field + "': missing");
      if (!value[field].is_string())
        fail_at(path, where, std::string("field '") + field + "': expected a string");
    }
    std::string id = value["id"].get<std::string>();
    if (!answers.emplace(id, value["answer"].get<std::string>()).second)
      fail_at(path, where, "field 'id': duplicate id '" + id + "'");
  });
  return answers;
}

void write_answers_jsonl(const std::string& path,
                         const std::map<std::string, std::string>& answers) {
  std::string bytes;
  for (const auto& [id, answer] : answers) {
    nlohmann::ordered_json line;
    line["id"] = id;
    line["answer"] = answer;
    bytes += line.dump() + "\n";
  }
  write_file_atomically(path, bytes);
}

}  // namespace citeforge::data
