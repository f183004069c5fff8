#include "models/base_card.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"

namespace citeforge::models {
namespace fs = std::filesystem;

namespace {

std::string string_or_empty(const GgufFile& file, const std::string& key) {
  if (!file.has(key)) return "";
  const auto& value = file.at(key);
  return value.type == GgufValue::Type::kString ? value.string(key) : "";
}

std::string yaml_string(const YAML::Node& node, const std::string& key) {
  const auto value = node[key];
  return value && value.IsScalar() ? value.as<std::string>() : "";
}

}  // namespace

BaseModelFacts gguf_base_facts(const GgufFile& file) {
  return {string_or_empty(file, "general.name"), string_or_empty(file, "general.license"),
          string_or_empty(file, "general.source.huggingface.repository")};
}

std::string imported_base_card(const BaseModelFacts& facts, const std::string& gguf_path) {
  YAML::Emitter yaml;
  yaml << YAML::BeginMap;
  if (!facts.name.empty()) yaml << YAML::Key << "model_name" << YAML::Value << facts.name;
  if (!facts.license.empty()) yaml << YAML::Key << "license" << YAML::Value << facts.license;
  // An imported file's source repository is the base itself, which a card's base_model names.
  if (!facts.hub_id.empty()) yaml << YAML::Key << "base_model" << YAML::Value << facts.hub_id;
  yaml << YAML::Key << "tags" << YAML::Value << YAML::Flow << YAML::BeginSeq << "gguf"
       << "citeforge-import" << YAML::EndSeq;
  yaml << YAML::EndMap;
  return "---\n" + std::string(yaml.c_str()) + "\n---\n\n# " +
         (facts.name.empty() ? fs::path(gguf_path).stem().string() : facts.name) +
         "\n\nImported by `citeforge import gguf` from `" +
         fs::path(gguf_path).filename().string() +
         "` (its general.* metadata above). The weights are the file's, dequantised.\n";
}

std::string front_matter(const std::string& markdown) {
  if (markdown.rfind("---\n", 0) != 0) return "";
  const auto end = markdown.find("\n---", 3);
  if (end == std::string::npos) return "";
  return markdown.substr(4, end - 3);
}

BaseModelFacts read_base_facts(const std::string& model_dir) {
  BaseModelFacts facts;
  const fs::path card = fs::path(model_dir) / "README.md";
  if (fs::is_regular_file(card)) {
    const std::string yaml = front_matter(read_file(card.string()));
    if (!yaml.empty()) {
      YAML::Node node;
      try {
        node = YAML::Load(yaml);
      } catch (const YAML::Exception& e) {
        fail_at(card.string(), "front matter", std::string("not YAML: ") + e.what());
      }
      if (node.IsMap()) {
        facts.name = yaml_string(node, "model_name");
        facts.license = yaml_string(node, "license");
        if (node["tags"] && node["tags"].IsSequence())
          for (const auto& tag : node["tags"])
            if (tag.IsScalar() && tag.as<std::string>() == "citeforge-import")
              facts.hub_id = yaml_string(node, "base_model");
      }
    }
  }
  // The hub's download cache keeps a repository in .../models--<owner>--<name>/snapshots/<rev>.
  if (facts.hub_id.empty())
    for (const auto& part : fs::absolute(model_dir))
      if (const std::string s = part.string(); s.rfind("models--", 0) == 0) {
        const auto split = s.find("--", 8);
        if (split != std::string::npos)
          facts.hub_id = s.substr(8, split - 8) + "/" + s.substr(split + 2);
      }
  const fs::path config = fs::path(model_dir) / "config.json";
  if (facts.name.empty() && fs::is_regular_file(config)) {
    const auto json = nlohmann::json::parse(read_file(config.string()), nullptr, false);
    if (json.is_object() && json.contains("_name_or_path") && json["_name_or_path"].is_string())
      facts.name = json["_name_or_path"].get<std::string>();
  }
  return facts;
}

}  // namespace citeforge::models
