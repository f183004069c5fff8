// A merged model as a GGUF file that llama.cpp (and so Ollama) loads: the `llama` architecture
// with its metadata, the tokenizer as llama.cpp's `gpt2` BPE vocabulary (tokens, types, merges,
// pre-tokeniser name, special ids, chat template), and the weights in F16, BF16 or Q8_0 (norms in
// F32, as llama.cpp's converter writes them), with Q and K rows in llama.cpp's interleaved
// order. The inverse of gguf_import.h; written to a temporary name and renamed when complete.
#pragma once

#include <string>

#include "models/llama.h"

namespace citeforge::models {

enum class GgufExportType { f16, bf16, q8_0 };

// "f16", "bf16", "q8_0"; anything else is an Error naming the option.
GgufExportType gguf_export_type(const std::string& name);

// Writes `model` (adapters merged, no NF4 layers left) with the tokenizer of `model_dir` to
// `out_file`. What llama.cpp's `llama` architecture cannot express (biases, q/k norms, RoPE
// scaling, a sliding window) and a SentencePiece tokenizer are one-line Errors naming them.
void export_gguf(LlamaForCausalLM& model, const std::string& model_dir, const std::string& out_file,
                 GgufExportType type);

}  // namespace citeforge::models
