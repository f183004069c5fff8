// The answers a command reads beside an example file, as `score` and `fix-citations` take them:
// `--answers FILE.jsonl` (one {"id", "answer"} per example) or `--reference NAME` (each
// example's reference answer of that name).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "data/example.h"
#include "trainer/cli/cli_args.h"

namespace citeforge::trainer {

// "a, b, c" (or "none"): the reference names an example has, for messages.
std::string list_names(const std::map<std::string, std::string>& references);

// The answer of each example, in the order of the data file. Errors name the file and the
// example or id: a missing reference, an answer for no example, an example without an answer.
std::vector<std::string> answers_for(const std::vector<data::Example>& examples,
                                     const std::string& data_path, const CliArgs& cli);

}  // namespace citeforge::trainer
