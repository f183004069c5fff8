// A small command-line parser for the citeforge subcommands: `--name value`, `--flag`, and
// positional arguments. Unknown or missing options are citeforge::Error with a one-line message.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace citeforge::trainer {

struct CliArgs {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values;  // "--set" may repeat
  std::set<std::string> flags;

  bool has(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;
  std::string require(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  double number(const std::string& name, double fallback) const;
  long integer(const std::string& name, long fallback) const;
  std::vector<std::string> all(const std::string& name) const;
};

// Parses `args` for `command`: `value_options` take one value, `flag_options` take none;
// anything else starting with "--" is an error naming the command.
CliArgs parse_cli(const std::string& command, const std::vector<std::string>& args,
                  const std::set<std::string>& value_options,
                  const std::set<std::string>& flag_options);

}  // namespace citeforge::trainer
