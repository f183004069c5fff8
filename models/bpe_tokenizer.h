// Byte-level BPE (the GPT-2 family: SmolLM, Llama 3, Qwen, ...), as HF `tokenizers` runs it:
// added tokens are cut out of the text whole, the rest is pre-tokenised by a sequence of regex
// splits (PCRE2 with Unicode properties), each piece's bytes are mapped to GPT-2's printable
// byte alphabet and merged by rank. Reads an HF `tokenizer.json` or is built from GGUF metadata,
// and writes a `tokenizer.json` that HF loads.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <unordered_map>
#include <vector>

namespace citeforge::models {

// One pre-tokeniser step: split every piece at the matches of `pattern`, keeping both the matches
// and the text between them as pieces (HF's "Isolated" split behaviour).
struct PreTokenizerStep {
  std::string pattern;  // PCRE2 syntax
  std::string kind;     // how tokenizer.json spells it: "Digits", "ByteLevel" or "Split"
};

// The regex of GPT-2's pre-tokeniser (HF ByteLevel with use_regex).
extern const char* const kGpt2Pattern;

// Everything that defines a byte-level BPE tokenizer.
struct BpeVocabulary {
  std::vector<std::string> tokens;  // by id; ordinary tokens in the byte-level alphabet
  std::vector<std::pair<std::string, std::string>> merges;  // by rank
  struct Added {
    int64_t id = 0;
    std::string content;
    bool special = true;
  };
  std::vector<Added> added;  // matched whole in input text, decoded as their content
  std::vector<PreTokenizerStep> pre_tokenizer;
  bool ignore_merges = false;  // a piece that is itself a token is not split (Llama 3)
  bool normalize_nfc = false;  // text outside added tokens is put in Unicode NFC first (Qwen)
  bool add_bos = false;        // whether the model expects BOS before a plain prompt
  int64_t bos_id = -1, eos_id = -1, pad_id = -1, unk_id = -1;
};

// The pre-tokeniser that llama.cpp's GGUF metadata names `tokenizer.ggml.pre` ("gpt-2",
// "smollm", "llama-bpe", "qwen2"); an unknown name is an Error naming `file`.
std::vector<PreTokenizerStep> pre_tokenizer_by_name(const std::string& name,
                                                    const std::string& file);
// Those names, each once (aliases such as "llama3" left out).
std::vector<std::string> pre_tokenizer_names();

// Reads an HF tokenizer.json (model type BPE with a ByteLevel pre-tokeniser or decoder) and,
// when it lies beside it, tokenizer_config.json for the BOS/EOS/pad tokens. Anything else
// (WordPiece, Unigram, a normaliser other than NFC, a pre-tokeniser step this code does not
// implement) is an Error naming the file and the field.
BpeVocabulary read_tokenizer_json(const std::string& path);

// The tokenizer.json and tokenizer_config.json that HF `AutoTokenizer` loads back to the same
// tokenizer. `chat_template` (Jinja, may be empty) goes into tokenizer_config.json.
nlohmann::json tokenizer_json(const BpeVocabulary& vocab);
nlohmann::json tokenizer_config_json(const BpeVocabulary& vocab, const std::string& chat_template,
                                     int64_t model_max_length);

class BpeTokenizer {
 public:
  // `origin` names the source in error messages.
  BpeTokenizer(BpeVocabulary vocab, std::string origin);
  ~BpeTokenizer();
  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;

  // With `parse_special`, added tokens written in `text` become their ids (as HF encodes by
  // default); without, they are ordinary text (for user and document text inside a prompt).
  std::vector<int64_t> encode(const std::string& text, bool parse_special = true) const;
  // The bytes the ids stand for; added tokens as their content. Ids outside the vocabulary
  // are skipped.
  std::string decode(const std::vector<int64_t>& ids) const;
  std::string piece(int64_t id) const;
  // The id of an added token by content, or -1.
  int64_t added_token_id(const std::string& content) const;

  const BpeVocabulary& vocabulary() const { return vocab_; }
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.tokens.size()); }

 private:
  struct Compiled;
  void encode_piece(const std::string& piece, std::vector<int64_t>& out) const;
  void encode_ordinary(const std::string& text, std::vector<int64_t>& out) const;

  BpeVocabulary vocab_;
  std::string origin_;
  std::unordered_map<std::string, int64_t> token_ids_;
  std::unordered_map<uint64_t, std::pair<int32_t, int64_t>> merges_;  // (a, b) -> (rank, merged)
  std::vector<int64_t> byte_ids_;  // id of each byte's single-character token, -1 if none
  std::vector<char> is_added_;     // by id
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace citeforge::models
