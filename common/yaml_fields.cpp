#include "common/yaml_fields.h"

#include <cerrno>
#include <cstdlib>

#include "common/error.h"

namespace citeforge {

namespace {

std::string where(const YAML::Node& node, const std::string& key) {
  const YAML::Mark mark = node.Mark();
  std::string out;
  if (!mark.is_null()) out = "line " + std::to_string(mark.line + 1);
  if (!key.empty()) out += (out.empty() ? "" : ", ") + std::string("key ") + key;
  return out;
}

std::string scalar_text(const YAML::Node& node, const YamlPlace& place, const char* expected) {
  if (!node.IsScalar()) yaml_fail(node, place, std::string("expected ") + expected);
  return node.Scalar();
}

}  // namespace

void yaml_fail(const YAML::Node& node, const YamlPlace& place, const std::string& what) {
  fail_at(place.file, where(node, place.key), what);
}

void require_known_keys(const YAML::Node& node, const std::set<std::string>& allowed,
                        const std::string& file, const std::string& key_prefix) {
  if (!node.IsMap()) {
    std::string prefix = key_prefix;
    if (!prefix.empty() && prefix.back() == '.') prefix.pop_back();
    yaml_fail(node, {file, prefix}, "expected a mapping");
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    // A complex key ("? [a, b]: 1") is valid YAML but no key of ours; as<std::string>() on it
    // throws yaml-cpp's own exception, which no caller expects.
    if (!entry.first.IsScalar())
      yaml_fail(entry.first, {file, key_prefix + "?"}, "a key must be a plain name");
    const std::string key = entry.first.as<std::string>();
    // yaml-cpp keeps both entries of a repeated key and lookups find the first: the second
    // would be silently ignored.
    if (!seen.insert(key).second)
      yaml_fail(entry.first, {file, key_prefix + key}, "given twice in the same mapping");
    if (!allowed.count(key)) {
      std::string known;
      for (const std::string& name : allowed) known += (known.empty() ? "" : ", ") + name;
      yaml_fail(entry.first, {file, key_prefix + key}, "unknown key (known: " + known + ")");
    }
  }
}

std::string yaml_string(const YAML::Node& node, const YamlPlace& place) {
  return scalar_text(node, place, "a string");
}

long long yaml_integer(const YAML::Node& node, const YamlPlace& place) {
  const std::string text = scalar_text(node, place, "an integer");
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    yaml_fail(node, place, "expected an integer, got '" + text + "'");
  return value;
}

std::uint64_t yaml_unsigned(const YAML::Node& node, const YamlPlace& place) {
  const std::string text = scalar_text(node, place, "a non-negative integer");
  char* end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno == ERANGE)
    yaml_fail(node, place, "expected a non-negative integer, got '" + text + "'");
  return value;
}

double yaml_number(const YAML::Node& node, const YamlPlace& place) {
  const std::string text = scalar_text(node, place, "a number");
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') yaml_fail(node, place, "expected a number, got '" + text + "'");
  return value;
}

std::vector<std::string> yaml_string_list(const YAML::Node& node, const YamlPlace& place) {
  if (!node.IsSequence()) yaml_fail(node, place, "expected a list of strings");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i)
    out.push_back(yaml_string(node[i], {place.file, place.key + "[" + std::to_string(i) + "]"}));
  return out;
}

YAML::Node parse_yaml_text(const std::string& text, const std::string& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail_at(file, "line " + std::to_string(e.mark.line + 1), "invalid YAML: " + e.msg);
  }
}

}  // namespace citeforge
