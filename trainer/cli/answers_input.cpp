#include "trainer/cli/answers_input.h"

#include <cstdio>

#include "common/error.h"
#include "data/answers.h"
#include "trainer/eval/eval_archive.h"

namespace citeforge::trainer {

std::vector<CliOption> answer_options() {
  return {{"data", "FILE.jsonl", "the examples (required)"},
          {"answers", "ANSWERS.jsonl|ARCHIVE.h5",
           "the answers: one {id, answer} per line, or a run's evaluation archive"},
          {"reference", "NAME", "score each example's reference answer of this name instead"}};
}

std::string list_names(const std::map<std::string, std::string>& references) {
  std::string names;
  for (const auto& [name, answer] : references) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

namespace {

bool is_archive(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0;
}

// An evaluation archive's answers by id; `examples` keeps those the archive answered.
std::map<std::string, std::string> archive_answers(std::vector<data::Example>& examples,
                                                   const std::string& archive_path,
                                                   const std::string& data_path) {
  const EvalRecord record = read_eval_archive(archive_path);
  std::map<std::string, std::string> answers;
  for (std::size_t i = 0; i < record.ids.size(); ++i)
    answers[record.ids[i]] = record.generations[i];
  const std::size_t all = examples.size();
  std::erase_if(examples, [&](const data::Example& e) { return !answers.count(e.id); });
  if (examples.size() < all)
    std::fprintf(stderr,
                 "[answers] %s answers %zu of the %zu examples in %s; the others are left out\n",
                 archive_path.c_str(), examples.size(), all, data_path.c_str());
  return answers;
}

}  // namespace

std::vector<std::string> answers_for(std::vector<data::Example>& examples,
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
  return answers_from_file(examples, data_path, cli.require("answers"));
}

std::vector<std::string> answers_from_file(std::vector<data::Example>& examples,
                                           const std::string& data_path,
                                           const std::string& answers_path) {
  std::vector<std::string> out;
  auto answers = is_archive(answers_path) ? archive_answers(examples, answers_path, data_path)
                                          : data::read_answers_jsonl(answers_path);
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
