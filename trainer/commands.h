// The citeforge subcommands. Each takes the arguments after its name and returns the exit code;
// errors are thrown as citeforge::Error and turned into one line by main().
#pragma once

#include <string>
#include <vector>

namespace citeforge::trainer {

using Args = std::vector<std::string>;

int command_generate(const Args& args);
int command_score(const Args& args);
int command_data(const Args& args);
int command_run(const Args& args);
int command_export(const Args& args);
int command_tables(const Args& args);
int command_launch(const Args& args);
int command_import(const Args& args);
int command_tokenize(const Args& args);

// An adapter directory (a checkpoint, whose checksums are verified first, or a peft export)
// that holds adapter_model.safetensors; returns `dir`.
std::string verified_adapter_dir(const std::string& dir);
// base_model_name_or_path of the adapter in `adapter_dir`.
std::string adapter_base_model(const std::string& adapter_dir);

}  // namespace citeforge::trainer
