// safetensors checkpoints: memory-mapped reading (single file or sharded with
// model.safetensors.index.json) and atomic writing. Tensors handed out view the mapping; no
// full copy of a checkpoint is made.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/mapped_file.h"

namespace citeforge::models {

struct TensorEntry {
  std::string file;   // which file holds it (for error messages)
  std::string dtype;  // safetensors spelling: F32, F16, BF16, I64, ...
  std::vector<int64_t> shape;
  size_t begin = 0, end = 0;                  // byte range inside the file's data section
  size_t section = 0;                         // where that data section starts in the file
  std::shared_ptr<const MappedFile> mapping;  // kept alive by the tensors that view it
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

// One tensor of a file written by write_safetensors_streamed: what its header entry says.
struct SafetensorsSpec {
  std::string name;
  torch::ScalarType dtype = torch::kFloat32;
  std::vector<int64_t> shape;
};

// Writes a safetensors file whose header is made from `specs` and whose i-th tensor is made by
// `make(i)` only when its turn comes and written at once, so a checkpoint larger than memory
// can be written one tensor at a time. A tensor unlike its spec is an Error naming it. Written
// through a temporary file that is fsynced and renamed; on an error the temporary file is
// removed.
void write_safetensors_streamed(const std::string& path, const std::vector<SafetensorsSpec>& specs,
                                const std::function<torch::Tensor(size_t)>& make,
                                const std::map<std::string, std::string>& metadata = {});

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
