// The SentencePiece tokenizer of Llama/Mistral checkpoints (`tokenizer.model`), and chat
// templates that wrap a user message the way each model family was fine-tuned to see it.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace citeforge::models {

class Tokenizer {
 public:
  // Loads a SentencePiece model file; a missing or invalid file is an Error naming it.
  explicit Tokenizer(const std::string& model_path);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  std::vector<int64_t> encode(const std::string& text, bool add_bos = false,
                              bool add_eos = false) const;
  std::string decode(const std::vector<int64_t>& ids) const;
  // The text of one piece as it appears inside a decoded string (byte pieces become bytes).
  std::string piece(int64_t id) const;

  int64_t vocab_size() const;
  int64_t bos_id() const;
  int64_t eos_id() const;
  int64_t pad_id() const;  // -1 when the model defines none
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string path_;
};

// A chat format as data: `prompt` is the text around the user message, with the markers
// {system} and {user}, and <bos> / <eos> for the special tokens; `answer_suffix` closes an
// assistant turn in training data.
struct ChatTemplate {
  std::string name;
  std::string prompt;              // used when there is no system message
  std::string prompt_with_system;  // used when there is one
  std::string answer_suffix;
};

// The built-in formats: "llama2", "mistral", "zephyr", "plain". Unknown names are an Error.
const ChatTemplate& chat_template(const std::string& name);
std::vector<std::string> chat_template_names();

// Token ids of the prompt for `user` (and optional `system`) under `tmpl`. Text between special
// tokens is encoded chunk by chunk, each with SentencePiece's dummy prefix (HF's legacy mode).
std::vector<int64_t> encode_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& user, const std::string& system = "");
// Token ids of an assistant answer followed by the template's answer suffix.
std::vector<int64_t> encode_chat_answer(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& answer);

}  // namespace citeforge::models
