#include "models/tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "common/error.h"

namespace citeforge::models {

Tokenizer::Tokenizer(const std::string& model_path)
    : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()), path_(model_path) {
  if (!std::filesystem::exists(model_path)) fail_at(model_path, "", "tokenizer model not found");
  auto status = sp_->Load(model_path);
  if (!status.ok()) fail_at(model_path, "", "not a SentencePiece model: " + status.ToString());
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool add_bos, bool add_eos) const {
  std::vector<int> ids;
  auto status = sp_->Encode(text, &ids);
  if (!status.ok()) throw Error(path_ + ": encode failed: " + status.ToString());
  std::vector<int64_t> out;
  out.reserve(ids.size() + 2);
  if (add_bos) out.push_back(bos_id());
  out.insert(out.end(), ids.begin(), ids.end());
  if (add_eos) out.push_back(eos_id());
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<int> narrow;
  narrow.reserve(ids.size());
  for (int64_t id : ids)
    if (id >= 0 && id < vocab_size()) narrow.push_back(static_cast<int>(id));
  std::string text;
  auto status = sp_->Decode(narrow, &text);
  if (!status.ok()) throw Error(path_ + ": decode failed: " + status.ToString());
  return text;
}

std::string Tokenizer::piece(int64_t id) const {
  return sp_->IdToPiece(static_cast<int>(id));
}
int64_t Tokenizer::vocab_size() const {
  return sp_->GetPieceSize();
}
int64_t Tokenizer::bos_id() const {
  return sp_->bos_id();
}
int64_t Tokenizer::eos_id() const {
  return sp_->eos_id();
}
int64_t Tokenizer::pad_id() const {
  return sp_->pad_id();
}

namespace {

// Formats as their model cards define them. Llama 2 and Mistral write [INST] as plain text;
// Zephyr closes each turn with the EOS token.
const std::vector<ChatTemplate>& templates() {
  static const std::vector<ChatTemplate> all = {
      {"plain", "<bos>{user}\n", "<bos>{system}\n\n{user}\n", "<eos>"},
      {"llama2", "<bos>[INST] {user} [/INST]",
       "<bos>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]", "<eos>"},
      {"mistral", "<bos>[INST] {user} [/INST]", "<bos>[INST] {system}\n\n{user} [/INST]", "<eos>"},
      {"zephyr", "<bos><|user|>\n{user}<eos>\n<|assistant|>\n",
       "<bos><|system|>\n{system}<eos>\n<|user|>\n{user}<eos>\n<|assistant|>\n", "<eos>"},
  };
  return all;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
}

// Encodes text with <bos>/<eos> markers into ids. Markers are found before the user text is
// substituted, so a literal "<eos>" typed by a user stays text.
std::vector<int64_t> encode_marked(const Tokenizer& tokenizer, const std::string& pattern,
                                   const std::string& system, const std::string& user) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < pattern.size()) {
    size_t bos = pattern.find("<bos>", pos), eos = pattern.find("<eos>", pos);
    size_t next = std::min(bos, eos);
    std::string chunk =
        pattern.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!chunk.empty()) {
      replace_all(chunk, "{system}", system);
      replace_all(chunk, "{user}", user);
      auto ids = tokenizer.encode(chunk);
      out.insert(out.end(), ids.begin(), ids.end());
    }
    if (next == std::string::npos) break;
    out.push_back(next == bos ? tokenizer.bos_id() : tokenizer.eos_id());
    pos = next + 5;
  }
  return out;
}

}  // namespace

const ChatTemplate& chat_template(const std::string& name) {
  for (const auto& t : templates())
    if (t.name == name) return t;
  std::string known;
  for (const auto& t : templates()) known += (known.empty() ? "" : ", ") + t.name;
  throw Error("unknown chat template '" + name + "' (known: " + known + ")");
}

std::vector<std::string> chat_template_names() {
  std::vector<std::string> names;
  for (const auto& t : templates()) names.push_back(t.name);
  return names;
}

std::vector<int64_t> encode_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& user, const std::string& system) {
  return encode_marked(tokenizer, system.empty() ? tmpl.prompt : tmpl.prompt_with_system, system,
                       user);
}

std::vector<int64_t> encode_chat_answer(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& answer) {
  return encode_marked(tokenizer, "{user}" + tmpl.answer_suffix, "", answer);
}

}  // namespace citeforge::models
