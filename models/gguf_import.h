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

// Every tensor under its HF name in PyTorch layout, float32. llama.cpp's converter interleaves
// the rows of q_proj and k_proj per head (its RoPE rotates adjacent pairs, HF's rotates the two
// halves); this undoes that permutation. A tensor this mapping does not know is an Error.
std::vector<std::pair<std::string, torch::Tensor>> gguf_hf_weights(
    const GgufFile& file, const ModelConfig& config,
    NonFiniteWeights non_finite = NonFiniteWeights::error);

// The other direction, for export (gguf_export.h): an HF tensor name's llama.cpp name ("" for
// one outside the Llama layout), from the same name table as the import; and q_proj / k_proj
// rows put from HF's order into llama.cpp's interleaved one, the inverse of the import's.
std::string gguf_tensor_name(const std::string& hf_name);
torch::Tensor llama_cpp_rows(const torch::Tensor& w, int64_t heads);

// The tokenizer from `tokenizer.ggml.*` metadata (model "gpt2": byte-level BPE).
BpeVocabulary gguf_vocabulary(const GgufFile& file);

// The chat template (Jinja) the file carries, or "".
std::string gguf_chat_template(const GgufFile& file);

// Writes `out_dir` with config.json, generation_config.json, model.safetensors, tokenizer.json
// and tokenizer_config.json. Everything is written to a temporary directory beside it and
// renamed into place at the end, so a failure leaves no half-written `out_dir`; an existing
// non-empty `out_dir` is an Error. `log` receives progress lines.
// A NaN or infinite weight is an Error naming the tensor unless `non_finite` says warn.
void import_gguf(const std::string& gguf_path, const std::string& out_dir,
                 void (*log)(const std::string&) = nullptr,
                 NonFiniteWeights non_finite = NonFiniteWeights::error);

// The HF-layout directory of a .gguf file, imported on first use into the cache
// ($CITEFORGE_CACHE, default ~/.cache/citeforge, under imported/, keyed by the file's name,
// size and modification time) and reused afterwards, so commands and runs can name a .gguf
// wherever they take a model directory.
// `non_finite` applies when it imports; a cached import was checked when it was made, and the
// loader checks its weights again.
std::string gguf_model_dir(const std::string& gguf_path, void (*log)(const std::string&) = nullptr,
                           NonFiniteWeights non_finite = NonFiniteWeights::error);

// True when `path` names a .gguf file by its extension.
bool is_gguf_path(const std::string& path);

}  // namespace citeforge::models
