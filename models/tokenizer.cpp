#include "models/tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/bpe_tokenizer.h"

namespace citeforge::models {

namespace fs = std::filesystem;

std::string tokenizer_file_in(const std::string& model_dir) {
  for (const char* name : {"tokenizer.model", "tokenizer.json"})
    if (fs::exists(fs::path(model_dir) / name)) return (fs::path(model_dir) / name).string();
  return "";
}

std::string find_tokenizer(const std::string& model_dir) {
  std::string file = tokenizer_file_in(model_dir);
  if (file.empty())
    fail_at(model_dir, "", "no tokenizer.model or tokenizer.json in the model directory");
  return file;
}

Tokenizer::Tokenizer(const std::string& path) : path_(path) {
  if (!fs::exists(path)) fail_at(path, "", "tokenizer not found");
  if (fs::is_directory(path)) path_ = find_tokenizer(path);
  if (path_.ends_with(".json")) {
    bpe_ = std::make_unique<BpeTokenizer>(read_tokenizer_json(path_), path_);
    return;
  }
  sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  auto status = sp_->Load(path_);
  if (!status.ok()) fail_at(path_, "", "not a SentencePiece model: " + status.ToString());
}

Tokenizer::Tokenizer(BpeVocabulary vocabulary, const std::string& origin)
    : bpe_(std::make_unique<BpeTokenizer>(std::move(vocabulary), origin)), path_(origin) {}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<int64_t> Tokenizer::encode(const std::string& text, bool add_bos, bool add_eos,
                                       bool parse_special) const {
  if (bpe_) {
    std::vector<int64_t> out;
    if (add_bos && bos_id() >= 0) out.push_back(bos_id());
    auto ids = bpe_->encode(text, parse_special);
    out.insert(out.end(), ids.begin(), ids.end());
    if (add_eos && eos_id() >= 0) out.push_back(eos_id());
    return out;
  }
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
  if (bpe_) return bpe_->decode(ids);
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
  if (bpe_) return bpe_->piece(id);
  return sp_->IdToPiece(static_cast<int>(id));
}
int64_t Tokenizer::vocab_size() const {
  return bpe_ ? bpe_->vocab_size() : sp_->GetPieceSize();
}
int64_t Tokenizer::bos_id() const {
  return bpe_ ? bpe_->vocabulary().bos_id : sp_->bos_id();
}
int64_t Tokenizer::eos_id() const {
  return bpe_ ? bpe_->vocabulary().eos_id : sp_->eos_id();
}
int64_t Tokenizer::pad_id() const {
  return bpe_ ? bpe_->vocabulary().pad_id : sp_->pad_id();
}
bool Tokenizer::adds_bos() const {
  return bpe_ ? bpe_->vocabulary().add_bos : true;
}
std::string Tokenizer::kind() const {
  return bpe_ ? "bpe" : "sentencepiece";
}
int64_t Tokenizer::special_token_id(const std::string& text) const {
  if (bpe_) return bpe_->added_token_id(text);
  int id = sp_->PieceToId(text);
  return id >= 0 && sp_->IsControl(id) ? id : -1;
}

nlohmann::json sentencepiece_tokenizer_config(const Tokenizer& tokenizer) {
  auto name = [&](int64_t id) -> nlohmann::json {
    if (id < 0) return nullptr;
    return tokenizer.piece(id);
  };
  return {{"tokenizer_class", "LlamaTokenizer"},
          {"add_bos_token", true},
          {"add_eos_token", false},
          {"legacy", true},
          {"clean_up_tokenization_spaces", false},
          {"bos_token", name(tokenizer.bos_id())},
          {"eos_token", name(tokenizer.eos_id())},
          {"unk_token", name(0)},
          {"pad_token", name(tokenizer.pad_id())}};
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
      // ChatML: every turn is <|im_start|>role\n...<|im_end|>\n; an answer ends at <|im_end|>.
      {"chatml",
       "<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n",
       "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
       "<|im_start|>assistant\n",
       "<|im_end|>",
       {"<|im_start|>", "<|im_end|>"}},
      // SmolLM2-Instruct's own template: ChatML that puts this system line first when the
      // conversation has none.
      {"smollm2",
       "",
       "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
       "<|im_start|>assistant\n",
       "<|im_end|>",
       {"<|im_start|>", "<|im_end|>"},
       "You are a helpful AI assistant named SmolLM, trained by Hugging Face"},
  };
  return all;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
}

// The id a template marker stands for; a tokenizer without it cannot use the template.
int64_t marker_id(const Tokenizer& tokenizer, const ChatTemplate& tmpl, const std::string& marker) {
  int64_t id = marker == "<bos>"   ? tokenizer.bos_id()
               : marker == "<eos>" ? tokenizer.eos_id()
                                   : tokenizer.special_token_id(marker);
  if (id < 0)
    fail_at(tokenizer.path(), "",
            "chat format '" + tmpl.name + "' needs the special token " + marker +
                ", which this tokenizer does not have (choose a chat format of this model)");
  return id;
}

// Encodes a pattern with markers into ids. Markers are found before the user text is
// substituted, and the text is encoded without special-token parsing, so a literal "<eos>" or
// "<|im_end|>" typed by a user or found in a document stays text.
std::vector<int64_t> encode_marked(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                   const std::string& pattern, const std::string& system,
                                   const std::string& user) {
  std::vector<std::string> markers = {"<bos>", "<eos>"};
  markers.insert(markers.end(), tmpl.specials.begin(), tmpl.specials.end());
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < pattern.size()) {
    size_t next = std::string::npos;
    const std::string* marker = nullptr;
    for (const auto& m : markers)
      if (size_t at = pattern.find(m, pos); at < next) next = at, marker = &m;
    std::string chunk =
        pattern.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (!chunk.empty()) {
      replace_all(chunk, "{system}", system);
      replace_all(chunk, "{user}", user);
      auto ids = tokenizer.encode(chunk);
      out.insert(out.end(), ids.begin(), ids.end());
    }
    if (next == std::string::npos) break;
    out.push_back(marker_id(tokenizer, tmpl, *marker));
    pos = next + marker->size();
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
  if (system.empty() && !tmpl.default_system.empty())
    return encode_marked(tokenizer, tmpl, tmpl.prompt_with_system, tmpl.default_system, user);
  return encode_marked(tokenizer, tmpl, system.empty() ? tmpl.prompt : tmpl.prompt_with_system,
                       system, user);
}

std::vector<int64_t> encode_chat_answer(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& answer) {
  return encode_marked(tokenizer, tmpl, "{user}" + tmpl.answer_suffix, "", answer);
}

}  // namespace citeforge::models
