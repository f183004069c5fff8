// Typed reads from yaml-cpp nodes with errors that name the file, line and key path, shared by
// every YAML reader (run configs, the synthetic-world config, prompt templates).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace citeforge {

// Where a YAML value is, for messages: the file and "line N, key a.b".
struct YamlPlace {
  std::string file;
  std::string key;  // full key path, e.g. "synth.teacher_precision"
};

// Throws citeforge::Error unless `node` is a mapping whose keys are all in `allowed`.
void require_known_keys(const YAML::Node& node, const std::set<std::string>& allowed,
                        const std::string& file, const std::string& key_prefix);

[[noreturn]] void yaml_fail(const YAML::Node& node, const YamlPlace& place,
                            const std::string& what);

std::string yaml_string(const YAML::Node& node, const YamlPlace& place);
long long yaml_integer(const YAML::Node& node, const YamlPlace& place);
std::uint64_t yaml_unsigned(const YAML::Node& node, const YamlPlace& place);
double yaml_number(const YAML::Node& node, const YamlPlace& place);
std::vector<std::string> yaml_string_list(const YAML::Node& node, const YamlPlace& place);

// Parses YAML text; a syntax error becomes citeforge::Error naming `file` and the line.
YAML::Node parse_yaml_text(const std::string& text, const std::string& file);

}  // namespace citeforge
