#include "trainer/eval/partial_answers.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "data/jsonl.h"

namespace citeforge::trainer {
namespace {

// A generation cut at max_new_tokens can end inside a UTF-8 sequence, which JSON strings cannot
// hold; such an answer is kept byte for byte as hex, so a resumed evaluation scores exactly what
// an uninterrupted one would have.
std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string from_hex(const std::string& hex, const std::string& where) {
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Error(where + ": field \"answer_hex\": '" + std::string(1, c) + "' is not a hex digit");
  };
  if (hex.size() % 2) throw Error(where + ": field \"answer_hex\": odd number of digits");
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2)
    out.push_back(char(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  return out;
}

}  // namespace

std::string partial_answers_path(const std::string& archive_path) {
  return std::filesystem::path(archive_path).replace_extension(".partial.jsonl").string();
}

std::map<std::size_t, std::string> read_partial_answers(
    const std::string& path, const std::vector<data::Example>& examples) {
  std::map<std::size_t, std::string> answers;
  if (!file_exists(path)) return answers;
  std::string text = read_file(path);
  const auto last_newline = text.find_last_of('\n');
  const std::size_t complete = last_newline == std::string::npos ? 0 : last_newline + 1;
  if (complete < text.size()) {
    std::fprintf(stderr, "[eval] %s: dropping an unfinished last line (the run stopped there)\n",
                 path.c_str());
    text.resize(complete);
  }
  data::for_each_jsonl_line(path, text, [&](std::size_t line, nlohmann::json& value) {
    const std::string where = path + ": line " + std::to_string(line);
    if (!value.is_object()) throw Error(where + ": expected a JSON object");
    for (const char* field : {"index", "id"})
      if (!value.contains(field)) throw Error(where + ": missing field \"" + field + "\"");
    const bool hex = value.contains("answer_hex");
    const char* answer_field = hex ? "answer_hex" : "answer";
    if (!value.contains(answer_field)) throw Error(where + ": missing field \"answer\"");
    if (!value["index"].is_number_unsigned())
      throw Error(where + ": field \"index\": expected a non-negative integer");
    if (!value["id"].is_string()) throw Error(where + ": field \"id\": expected a string");
    if (!value[answer_field].is_string())
      throw Error(where + ": field \"" + answer_field + "\": expected a string");
    const auto index = value["index"].get<std::size_t>();
    if (index >= examples.size())
      throw Error(where + ": field \"index\": " + std::to_string(index) +
                  " is outside the test set's " + std::to_string(examples.size()) +
                  " examples; delete the file to evaluate again");
    const auto id = value["id"].get<std::string>();
    if (id != examples[index].id)
      throw Error(where + ": field \"id\": \"" + id + "\" is not example " + std::to_string(index) +
                  " (\"" + examples[index].id +
                  "\"): the test set changed since; delete the file to evaluate again");
    const auto answer = value[answer_field].get<std::string>();
    answers[index] = hex ? from_hex(answer, where) : answer;
  });
  return answers;
}

void append_partial_answer(const std::string& path, std::size_t index, const std::string& id,
                           const std::string& answer) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  nlohmann::json line = {{"index", index}, {"id", id}, {"answer", answer}};
  std::string text;
  try {
    text = line.dump();
  } catch (const nlohmann::json::type_error&) {  // not valid UTF-8
    line.erase("answer");
    line["answer_hex"] = to_hex(answer);
    text = line.dump();
  }
  append_jsonl(path, text);
}

}  // namespace citeforge::trainer
