// The citeforge subcommands. Each takes the arguments after its name and returns the exit code;
// errors are thrown as citeforge::Error and turned into one line by main().
#pragma once

#include <string>
#include <vector>

namespace citeforge::trainer {

using Args = std::vector<std::string>;

int command_generate(const Args& args);
int command_score(const Args& args);
int command_fix_citations(const Args& args);
int command_evaluate_retriever(const Args& args);
int command_judge_attributability(const Args& args);
int command_data(const Args& args);
int command_run(const Args& args);
int command_export(const Args& args);
int command_tables(const Args& args);
int command_launch(const Args& args);
int command_import(const Args& args);
int command_tokenize(const Args& args);

}  // namespace citeforge::trainer
