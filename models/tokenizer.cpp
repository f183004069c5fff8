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

}  // namespace citeforge::models
