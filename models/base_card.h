// What a base model says about itself, for the model card of what is trained on it: its name,
// its licence and the hub repository it came from. An HF directory says it in its own model card
// (README.md's YAML front matter) and config.json; a GGUF file in its general.* metadata, which
// `citeforge import gguf` writes into the imported directory's README.md, so both kinds of base
// are read back the same way.
#pragma once

#include <string>

#include "models/gguf.h"

namespace citeforge::models {

struct BaseModelFacts {
  std::string name;     // e.g. "SmolLM2 135M Instruct"; empty when the base names none
  std::string license;  // the licence identifier its card or metadata gives (e.g. apache-2.0)
  std::string hub_id;   // "owner/name" on the Hugging Face hub, where the base says so
};

// From general.name, general.license and general.source.huggingface.repository.
BaseModelFacts gguf_base_facts(const GgufFile& file);

// The README.md of an imported GGUF: front matter with what `facts` holds, and a line naming
// the file it was imported from.
std::string imported_base_card(const BaseModelFacts& facts, const std::string& gguf_path);

// DIR/README.md's front matter (model_name, license, and base_model only as the hub id of an
// imported file, see imported_base_card), the hub id of a directory in the hub's download cache
// (models--<owner>--<name>/snapshots/...) and, for the name, config.json's _name_or_path.
// A base without them gives empty fields; front matter that is not YAML is an Error naming the
// file.
BaseModelFacts read_base_facts(const std::string& model_dir);

// The YAML between a Markdown file's leading '---' lines, or "" when it has none.
std::string front_matter(const std::string& markdown);

}  // namespace citeforge::models
