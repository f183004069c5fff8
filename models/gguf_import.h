// A Llama-family GGUF file as an HF model: config, weights under HF names (dequantised to
// float32, Q/K rows put back in HF's order), and its byte-level BPE tokenizer. `import_gguf`
// writes the HF-layout directory every other command reads; the other functions let a run use a
// .gguf path directly.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "models/bpe_tokenizer.h"
#include "models/gguf.h"
#include "models/hf_config.h"
#include "models/model_tensors.h"

namespace citeforge::models {

// The model config from `llama.*` metadata. Another architecture, RoPE scaling, or a missing
// key is an Error naming the file and the key.
ModelConfig gguf_model_config(const GgufFile& file);

// What an import writes its weights as. `source` (the default of `citeforge import gguf`): each
// float tensor in its own type (F32, F16, BF16) and quantised ones in bf16, half of fp32's disk;
// `float32`: every tensor as its exact dequantised fp32 values, which an fp32 run computes with;
// `bfloat16`: every tensor in bf16.
enum class ImportDtype { source, float32, bfloat16 };

// "source", "float32", "bfloat16"; anything else is an Error naming `where` and the choices.
ImportDtype import_dtype_by_name(const std::string& name, const std::string& where);
const char* import_dtype_name(ImportDtype dtype);

// The HF name of a GGUF tensor ("" for one outside the Llama layout).
std::string gguf_hf_name(const std::string& gguf_name);

// One tensor under HF's layout, in `dtype` (each value the exact dequantised one, rounded once).
// llama.cpp's converter interleaves the rows of q_proj and k_proj per head (its RoPE rotates
// adjacent pairs, HF's rotates the two halves); this undoes that permutation. A NaN or infinite
// value is an Error naming the tensor unless `non_finite` says warn.
torch::Tensor gguf_hf_weight(const GgufFile& file, const ModelConfig& config,
                             const GgufTensor& tensor,
                             NonFiniteWeights non_finite = NonFiniteWeights::error,
                             torch::ScalarType dtype = torch::kFloat32);

// The other direction, for export (gguf_export.h): an HF tensor name's llama.cpp name ("" for
// one outside the Llama layout), from the same name table as the import; and q_proj / k_proj
// rows put from HF's order into llama.cpp's interleaved one, the inverse of the import's.
std::string gguf_tensor_name(const std::string& hf_name);
torch::Tensor llama_cpp_rows(const torch::Tensor& w, int64_t heads);

// The tokenizer from `tokenizer.ggml.*` metadata (model "gpt2": byte-level BPE).
BpeVocabulary gguf_vocabulary(const GgufFile& file);

// Writes `out_dir` with config.json, generation_config.json, model.safetensors, tokenizer.json
// and tokenizer_config.json. Everything is written to a temporary directory beside it and
// renamed into place at the end, so a failure leaves no half-written `out_dir`; an existing
// non-empty `out_dir` is an Error. `log` receives progress lines.
// The file is mapped, and its tensors are converted and written one at a time, each tensor's
// mapped pages handed back when it is written: the memory an import needs is about that of its
// largest tensor in fp32 and in the written type, not that of the model.
// A NaN or infinite weight is an Error naming the tensor unless `non_finite` says warn.
void import_gguf(const std::string& gguf_path, const std::string& out_dir,
                 void (*log)(const std::string&) = nullptr,
                 NonFiniteWeights non_finite = NonFiniteWeights::error,
                 ImportDtype dtype = ImportDtype::source);

// The HF-layout directory of a .gguf file, imported on first use into the cache
// ($CITEFORGE_CACHE, default ~/.cache/citeforge, under imported/, keyed by the file's name,
// size and modification time) and reused afterwards, so commands and runs can name a .gguf
// wherever they take a model directory.
// `non_finite` applies when it imports; a cached import was checked when it was made, and the
// loader checks its weights again. `compute` is the dtype the caller computes in: an fp32 caller
// gets the exact fp32 values (ImportDtype::float32), any other the compact `source` import, each
// cached under its own name.
std::string gguf_model_dir(const std::string& gguf_path, void (*log)(const std::string&) = nullptr,
                           NonFiniteWeights non_finite = NonFiniteWeights::error,
                           torch::ScalarType compute = torch::kFloat32);

}  // namespace citeforge::models
