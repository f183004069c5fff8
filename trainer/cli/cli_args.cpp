#include "trainer/cli/cli_args.h"

#include <cstdlib>

#include "common/error.h"

namespace citeforge::trainer {

bool CliArgs::has(const std::string& name) const {
  return flags.count(name) > 0 || values.count(name) > 0;
}

std::optional<std::string> CliArgs::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::string CliArgs::require(const std::string& name) const {
  auto value = get(name);
  if (!value) throw Error("missing required option --" + name);
  return *value;
}

std::string CliArgs::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

double CliArgs::number(const std::string& name, double fallback) const {
  auto value = get(name);
  if (!value) return fallback;
  char* end = nullptr;
  double parsed = std::strtod(value->c_str(), &end);
  if (value->empty() || *end != '\0') throw Error("--" + name + ": not a number: '" + *value + "'");
  return parsed;
}

long CliArgs::integer(const std::string& name, long fallback) const {
  auto value = get(name);
  if (!value) return fallback;
  char* end = nullptr;
  long parsed = std::strtol(value->c_str(), &end, 10);
  if (value->empty() || *end != '\0')
    throw Error("--" + name + ": not an integer: '" + *value + "'");
  return parsed;
}

std::vector<std::string> CliArgs::all(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

CliArgs parse_cli(const std::string& command, const std::vector<std::string>& args,
                  const std::set<std::string>& value_options,
                  const std::set<std::string>& flag_options) {
  CliArgs out;
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
    if (flag_options.count(name)) {
      if (inline_value) throw Error(command + ": --" + name + " takes no value");
      out.flags.insert(name);
    } else if (value_options.count(name)) {
      if (!inline_value && i + 1 >= args.size())
        throw Error(command + ": --" + name + " needs a value");
      out.values[name].push_back(inline_value ? *inline_value : args[++i]);
    } else {
      throw Error(command + ": unknown option --" + name);
    }
  }
  return out;
}

}  // namespace citeforge::trainer
