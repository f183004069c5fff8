// The citeforge commands. Each takes the arguments after its name and returns the exit code;
// errors are thrown as citeforge::Error and turned into one line by main(). Each command's
// options are its table (cli_args.h), defined beside it; `data` is a group of subcommands.
#pragma once

#include <string>
#include <vector>

#include "trainer/cli/cli_args.h"

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
int command_paired(const Args& args);
int command_holm(const Args& args);

const CliCommand& generate_cli();
const CliCommand& score_cli();
const CliCommand& fix_citations_cli();
const CliCommand& evaluate_retriever_cli();
const CliCommand& judge_attributability_cli();
const CliCommand& run_cli();
const CliCommand& export_cli();
const CliCommand& tables_cli();
const CliCommand& launch_cli();
const CliCommand& import_cli();
const CliCommand& tokenize_cli();
const CliCommand& paired_cli();
const CliCommand& holm_cli();

// Every command, in the order `citeforge --help` lists them.
const std::vector<CliSubcommand>& citeforge_commands();
bool is_command(const std::string& name);
// The one-line summary of the `data` group of subcommands.
const char* data_summary();

}  // namespace citeforge::trainer
