#include "trainer/cli/answers_input.h"

#include "common/error.h"
#include "data/answers.h"

namespace citeforge::trainer {

std::string list_names(const std::map<std::string, std::string>& references) {
  std::string names;
  for (const auto& [name, answer] : references) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

std::vector<std::string> answers_for(const std::vector<data::Example>& examples,
                                     const std::string& data_path, const CliArgs& cli) {
  std::vector<std::string> out;
  if (auto reference = cli.get("reference")) {
    for (const auto& e : examples) {
      auto it = e.references.find(*reference);
      if (it == e.references.end())
        fail_at(
            data_path, "example '" + e.id + "'",
            "no reference answer '" + *reference + "' (it has: " + list_names(e.references) + ")");
      out.push_back(it->second);
    }
    return out;
  }
  std::string answers_path = cli.require("answers");
  auto answers = data::read_answers_jsonl(answers_path);
  std::map<std::string, bool> known;
  for (const auto& e : examples) known[e.id] = true;
  for (const auto& [id, answer] : answers)
    if (!known.count(id))
      fail_at(answers_path, "id '" + id + "'", "no such example in " + data_path);
  std::size_t missing = 0;
  std::string first_missing;
  for (const auto& e : examples) {
    auto it = answers.find(e.id);
    if (it == answers.end()) {
      if (missing++ == 0) first_missing = e.id;
      continue;
    }
    out.push_back(it->second);
  }
  if (missing > 0)
    fail_at(answers_path, "",
            "no answer for example '" + first_missing + "'" +
                (missing > 1 ? " and " + std::to_string(missing - 1) + " more" : ""));
  return out;
}

}  // namespace citeforge::trainer
