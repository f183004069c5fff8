// Trains a SentencePiece model (SentencePieceTrainer) for a model a run builds itself, with the
// Llama conventions: unk 0, BOS 1, EOS 2, byte fallback, digits split so citation numbers like
// [12] are spelled digit by digit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace citeforge::models {

// Writes `path` (a tokenizer.model). Same sentences and vocab size give the same file.
void train_tokenizer(const std::vector<std::string>& sentences, int64_t vocab_size,
                     const std::string& path);

}  // namespace citeforge::models
