// The tokenizer of a model, whichever kind its checkpoint ships: SentencePiece (Llama 2 /
// Mistral `tokenizer.model`) or byte-level BPE (HF `tokenizer.json`, or a GGUF's vocabulary; see
// models/bpe_tokenizer.h), behind one interface; and the chat templates that wrap a user message
// the way each model family was fine-tuned to see it.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace citeforge::models {

class BpeTokenizer;
struct BpeVocabulary;

// The tokenizer file of a model directory: tokenizer.model when there is one (SentencePiece),
// else tokenizer.json; "" when it has neither.
std::string tokenizer_file_in(const std::string& model_dir);
// tokenizer_file_in, with neither file an Error naming the directory.
std::string find_tokenizer(const std::string& model_dir);

class Tokenizer {
 public:
  // Loads a SentencePiece `.model` file, an HF `tokenizer.json`, or the tokenizer of a model
  // directory (find_tokenizer); a missing or invalid file is an Error naming it.
  explicit Tokenizer(const std::string& path);
  // A byte-level BPE from its definition (e.g. read from a GGUF file); `origin` names the source.
  Tokenizer(BpeVocabulary vocabulary, const std::string& origin);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // `parse_special`: special tokens written in the text (e.g. "<|im_start|>") become their
  // ids, as HF's encode does by default. Off by default, so user and document text can never
  // smuggle control tokens into a prompt; SentencePiece never parses them.
  std::vector<int64_t> encode(const std::string& text, bool add_bos = false, bool add_eos = false,
                              bool parse_special = false) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  // The text of one piece as it appears inside a decoded string (byte pieces become bytes).
  std::string piece(int64_t id) const;

  int64_t vocab_size() const;
  int64_t bos_id() const;
  int64_t eos_id() const;
  int64_t pad_id() const;  // -1 when the model defines none
  // Whether a plain (non-chat) prompt starts with BOS for this model: always for
  // SentencePiece Llama/Mistral, as the tokenizer's config says for BPE.
  bool adds_bos() const;
  // The id of a special (control) token by its text, or -1 when the tokenizer has none.
  int64_t special_token_id(const std::string& text) const;
  const std::string& path() const { return path_; }
  // "sentencepiece" or "bpe".
  std::string kind() const;
  // The byte-level BPE behind this tokenizer, or null for SentencePiece.
  const BpeTokenizer* bpe() const { return bpe_.get(); }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;  // exactly one of these two
  std::unique_ptr<BpeTokenizer> bpe_;
  std::string path_;
};

// The tokenizer_config.json that lets HF's AutoTokenizer load a SentencePiece tokenizer.model
// as a Llama tokenizer with this tokenizer's special tokens.
nlohmann::json sentencepiece_tokenizer_config(const Tokenizer& tokenizer);

}  // namespace citeforge::models
