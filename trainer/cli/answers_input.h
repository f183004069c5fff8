// The answers a command reads beside an example file, as `score` and `fix-citations` take them:
// `--answers FILE.jsonl` (one {"id", "answer"} per example), `--answers ARCHIVE.h5` (a run's
// evaluation archive, eval/<stage>-<k>/<test set>.h5: the answers that checkpoint wrote) or
// `--reference NAME` (each example's reference answer of that name).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "data/example.h"
#include "trainer/cli/cli_args.h"

namespace citeforge::trainer {

// --data, --answers and --reference, for the tables of the commands that read answers.
std::vector<CliOption> answer_options();

// "a, b, c" (or "none"): the reference names an example has, for messages.
std::string list_names(const std::map<std::string, std::string>& references);

// The answer of each example, in the order of the data file. Errors name the file and the
// example or id: a missing reference, an answer for no example, an example without an answer.
// An archive may answer a subset of the data file (a run evaluates a seeded sample of a test
// set): `examples` is then cut to the archive's examples, and the cut is said on stderr.
std::vector<std::string> answers_for(std::vector<data::Example>& examples,
                                     const std::string& data_path, const CliArgs& cli);
// The same for answers read from `answers_path` (JSONL or an archive).
std::vector<std::string> answers_from_file(std::vector<data::Example>& examples,
                                           const std::string& data_path,
                                           const std::string& answers_path);

}  // namespace citeforge::trainer
