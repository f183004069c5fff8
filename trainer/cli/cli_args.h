// The command line of every citeforge command and subcommand: one table per command (its
// options with their values, help and defaults, llama.cpp's common/arg.cpp being the model),
// from which both the parser and `--help` come. Unknown or missing options are citeforge::Error
// with a one-line message naming the command and the option.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace citeforge::trainer {

struct CliOption {
  std::string name;           // without the dashes: "data"
  std::string value;          // what it takes ("FILE.jsonl"); empty for a flag
  std::string help;           // one line
  std::string fallback = {};  // the default: shown by --help, returned when absent
  bool repeats = false;       // may be given several times (--set, --stop)
};

struct CliCommand {
  std::string name;       // as typed after `citeforge`: "score", "data import synsciqa"
  std::string summary;    // one line, for the list of commands
  std::string arguments;  // the positional arguments ("CONFIG.yaml"), empty for none
  std::string rules;      // how the options go together, printed under the usage line
  std::vector<CliOption> options;
};

// Thrown by parse_cli when the arguments ask for `--help`: main prints the text to standard
// output and exits 0.
struct CliHelp {
  std::string text;
};

// "a|b|c": the choices of an option, for its value in the table.
std::string one_of(const std::vector<std::string>& choices);

// The usage line, the rules and one line per option with its default.
std::string cli_help(const CliCommand& command);

struct CliArgs {
  const CliCommand* command = nullptr;
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values;  // "--set" may repeat
  std::set<std::string> flags;

  bool has(const std::string& name) const;
  // The value given, else the table's default (nullopt when it has none).
  std::optional<std::string> get(const std::string& name) const;
  std::string require(const std::string& name) const;
  // The value given, else `fallback` (for defaults computed at run time, such as the device).
  std::string get_or(const std::string& name, const std::string& fallback) const;
  double number(const std::string& name) const;
  long integer(const std::string& name) const;
  // A comma-separated list of integers ("1,2,3"); empty when the option is absent.
  std::vector<long> integers(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;
  // An error naming the command when positional arguments were given to one that takes none.
  void no_positional() const;
};

// `text` as a number when all of it is one (as strtod reads it, "nan" included), else nullopt:
// for option values (CliArgs::number) and numeric positional arguments alike.
std::optional<double> parse_number(const std::string& text);

// Parses `args` by `command`'s table; `--help` or `-h` anywhere throws CliHelp.
CliArgs parse_cli(const CliCommand& command, const std::vector<std::string>& args);

// One entry of a list of subcommands: a command with its table, or a group of subcommands of
// its own (no table; its summary given here).
struct CliSubcommand {
  std::string name;
  const CliCommand* command;  // null for a group
  std::function<int(const std::vector<std::string>&)> run;
  std::string summary = "";  // a group's; a command's comes from its table
};

// Runs the subcommand `args[0]` names with the arguments after it. `--help` (or nothing) lists
// the subcommands; an unknown one is an error naming the group and the choices.
int run_subcommand(const std::string& group, const std::string& summary,
                   const std::vector<CliSubcommand>& subcommands,
                   const std::vector<std::string>& args);

}  // namespace citeforge::trainer
