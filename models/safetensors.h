// safetensors checkpoints: memory-mapped reading (single file or sharded with
// model.safetensors.index.json) and atomic writing. Tensors handed out view the mapping; no
// full copy of a checkpoint is made.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace citeforge::models {

struct MappedFile;  // an mmap'ed file, kept alive by the tensors that view it

struct TensorEntry {
  std::string file;   // which file holds it (for error messages)
  std::string dtype;  // safetensors spelling: F32, F16, BF16, I64, ...
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;  // byte range inside the file's data section
  std::shared_ptr<MappedFile> mapping;
};

// The tensors of one checkpoint, possibly spread over several files.
struct SafetensorsCheckpoint {
  std::string location;  // the file or directory it was opened from
  std::map<std::string, TensorEntry> tensors;
  std::map<std::string, std::string> metadata;  // the "__metadata__" of the (first) file

  bool contains(const std::string& name) const { return tensors.count(name) > 0; }
  // A CPU tensor viewing the mapped bytes (read-only in spirit: clone before writing to it).
  torch::Tensor get(const std::string& name) const;
  std::vector<std::string> names() const;
};

// Opens a .safetensors file, a model.safetensors.index.json, or a directory holding either.
SafetensorsCheckpoint open_safetensors(const std::string& path);

// Writes `tensors` (any order; CPU or not, contiguous or not) to `path` through a temporary
// file that is fsynced and renamed, so a crash never leaves a half-written checkpoint.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The bytes of a safetensors file holding `tensors` (`path` only names it in error messages).
std::string serialize_safetensors(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata = {},
                                  const std::string& path = "<memory>");

}  // namespace citeforge::models
