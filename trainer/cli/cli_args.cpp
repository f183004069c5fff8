#include "trainer/cli/cli_args.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "common/error.h"
#include "common/join.h"

namespace citeforge::trainer {
namespace {

const CliOption& option_of(const CliCommand& command, const std::string& name) {
  for (const auto& option : command.options)
    if (option.name == name) return option;
  // Asking for an option the table lacks is a mistake in citeforge, not in the user's input.
  throw std::logic_error("citeforge " + command.name + ": no option --" + name + " in its table");
}

std::string usage_line(const CliCommand& command) {
  std::string line = "citeforge " + command.name;
  if (!command.arguments.empty()) line += " " + command.arguments;
  if (!command.options.empty()) line += " [options]";
  return line;
}

}  // namespace

std::string one_of(const std::vector<std::string>& choices) {
  return join(choices, "|");
}

std::string cli_help(const CliCommand& command) {
  std::string text = "usage: " + usage_line(command) + "\n";
  if (!command.summary.empty()) text += "\n" + command.summary + "\n";
  if (!command.rules.empty()) text += "\n" + command.rules + "\n";
  if (command.options.empty()) return text;
  text += "\noptions:\n";
  std::size_t width = 0;
  auto left = [](const CliOption& o) {
    return "  --" + o.name + (o.value.empty() ? "" : " " + o.value);
  };
  for (const auto& o : command.options) width = std::max(width, left(o).size());
  for (const auto& o : command.options) {
    std::string line = left(o);
    line.resize(width + 2, ' ');
    line += o.help;
    if (!o.fallback.empty()) line += " (default: " + o.fallback + ")";
    if (o.repeats) line += " (repeatable)";
    text += line + "\n";
  }
  std::string help = "  --help";
  help.resize(std::max(width + 2, help.size() + 2), ' ');
  text += help + "print this help\n";
  return text;
}

bool CliArgs::has(const std::string& name) const {
  return flags.count(name) > 0 || values.count(name) > 0;
}

std::optional<std::string> CliArgs::get(const std::string& name) const {
  auto it = values.find(name);
  if (it != values.end() && !it->second.empty()) return it->second.back();
  const auto& fallback = option_of(*command, name).fallback;
  if (fallback.empty()) return std::nullopt;
  return fallback;
}

std::string CliArgs::require(const std::string& name) const {
  auto value = get(name);
  if (!value)
    throw Error(command->name + ": missing required option --" + name + " (citeforge " +
                command->name + " --help lists the options)");
  return *value;
}

std::string CliArgs::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

std::optional<double> parse_number(const std::string& text) {
  char* end = nullptr;
  const double parsed = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') return std::nullopt;
  return parsed;
}

double CliArgs::number(const std::string& name) const {
  const std::string value = require(name);
  const auto parsed = parse_number(value);
  if (!parsed) throw Error(command->name + ": --" + name + ": not a number: '" + value + "'");
  return *parsed;
}

long CliArgs::integer(const std::string& name) const {
  const std::string value = require(name);
  char* end = nullptr;
  long parsed = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0')
    throw Error(command->name + ": --" + name + ": not an integer: '" + value + "'");
  return parsed;
}

std::vector<long> CliArgs::integers(const std::string& name) const {
  std::vector<long> out;
  const auto value = get(name);
  if (!value) return out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = value->find(',', begin);
    const std::string item = value->substr(begin, comma - begin);
    char* end = nullptr;
    const long parsed = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0')
      throw Error(command->name + ": --" + name + ": not a list of integers like 1,2,3: '" +
                  *value + "'");
    out.push_back(parsed);
    if (comma == std::string::npos) return out;
    begin = comma + 1;
  }
}

std::vector<std::string> CliArgs::all(const std::string& name) const {
  option_of(*command, name);
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

void CliArgs::no_positional() const {
  if (!positional.empty())
    throw Error(command->name + ": unexpected argument '" + positional.front() + "' (citeforge " +
                command->name + " --help shows the usage)");
}

CliArgs parse_cli(const CliCommand& command, const std::vector<std::string>& args) {
  for (const auto& arg : args)
    if (arg == "--help" || arg == "-h") throw CliHelp{cli_help(command)};
  CliArgs out;
  out.command = &command;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      out.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto option = std::find_if(command.options.begin(), command.options.end(),
                               [&](const CliOption& o) { return o.name == name; });
    if (option == command.options.end())
      throw Error(command.name + ": unknown option --" + name + " (citeforge " + command.name +
                  " --help lists the options)");
    if (option->value.empty()) {
      if (inline_value) throw Error(command.name + ": --" + name + " takes no value");
      out.flags.insert(name);
      continue;
    }
    if (!inline_value && i + 1 >= args.size())
      throw Error(command.name + ": --" + name + " needs a value (" + option->value + ")");
    auto& slot = out.values[name];
    if (!slot.empty() && !option->repeats)
      throw Error(command.name + ": --" + name + " given twice");
    slot.push_back(inline_value ? *inline_value : args[++i]);
  }
  return out;
}

int run_subcommand(const std::string& group, const std::string& summary,
                   const std::vector<CliSubcommand>& subcommands,
                   const std::vector<std::string>& args) {
  std::string names;
  for (const auto& s : subcommands) names += (names.empty() ? "" : ", ") + s.name;
  const bool top = group == "citeforge";
  const std::string usage = top ? "citeforge COMMAND" : "citeforge " + group + " SUBCOMMAND";
  const std::string word = top ? "command" : "subcommand";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::string text = "usage: " + usage + " [options]\n\n" + summary + "\n\n" + word + "s:\n";
    std::size_t width = 0;
    for (const auto& s : subcommands) width = std::max(width, s.name.size());
    for (const auto& s : subcommands) {
      std::string line = "  " + s.name;
      line.resize(width + 4, ' ');
      text += line + (s.command ? s.command->summary : s.summary) + "\n";
    }
    text += "\n(" + usage + " --help describes each" + (top ? "; citeforge --version" : "") + ")\n";
    if (args.empty()) throw Error("expected a " + word + " (" + names + ")\n" + text);
    throw CliHelp{text};
  }
  for (const auto& s : subcommands)
    if (s.name == args[0]) return s.run(std::vector<std::string>(args.begin() + 1, args.end()));
  throw Error((top ? "" : group + ": ") + "unknown " + word + " '" + args[0] + "' (" + names + ")");
}

}  // namespace citeforge::trainer
