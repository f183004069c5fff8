#include "models/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "common/join.h"

namespace citeforge::models {
namespace {

using nlohmann::json;

// GPT-2's map from bytes to printable code points: printable Latin-1 bytes stand for
// themselves, the other 68 (controls, space, DEL, NBSP, soft hyphen) move to U+0100 upwards, so
// every token is a printable string and " " is "Ġ".
std::vector<uint32_t> byte_to_code_point() {
  std::vector<uint32_t> map(256, 0);
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    map[b] = printable ? b : next++;
  }
  return map;
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

const std::vector<std::string>& byte_chars() {
  static const std::vector<std::string> chars = [] {
    std::vector<std::string> out;
    for (uint32_t cp : byte_to_code_point()) out.push_back(utf8(cp));
    return out;
  }();
  return chars;
}

// Inverse of the byte map, indexed by code point (all of them are below 0x144).
const std::vector<int>& code_point_to_byte() {
  static const std::vector<int> inverse = [] {
    std::vector<int> out(0x200, -1);
    auto map = byte_to_code_point();
    for (int b = 0; b < 256; ++b) out[map[b]] = b;
    return out;
  }();
  return inverse;
}

// Appends the bytes a byte-level token string stands for.
void append_token_bytes(const std::string& token, std::string& out) {
  const auto& inverse = code_point_to_byte();
  for (size_t i = 0; i < token.size();) {
    unsigned char c = token[i];
    uint32_t cp;
    size_t len;
    if (c < 0x80)
      cp = c, len = 1;
    else if ((c >> 5) == 6 && i + 1 < token.size())
      cp = ((c & 0x1F) << 6) | (token[i + 1] & 0x3F), len = 2;
    else
      cp = 0x10000, len = 1;  // not from the byte alphabet: copied as it is
    if (cp < inverse.size() && inverse[cp] >= 0) {
      out += static_cast<char>(inverse[cp]);
    } else {
      out.append(token, i, len);
    }
    i += len;
  }
}

uint64_t pair_key(int64_t a, int64_t b) {
  return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b);
}

std::string token_content(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  return "";
}

}  // namespace

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {
// Llama 3's split (llama.cpp "llama-bpe"): case-insensitive contractions, numbers in groups of
// up to three, a punctuation run may take one leading space and trailing newlines.
const char* const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2, Qwen2.5 and Qwen3 (llama.cpp "qwen2"): Llama 3's split with every digit on its own.
const char* const kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}  // namespace

std::vector<PreTokenizerStep> pre_tokenizer_by_name(const std::string& name,
                                                    const std::string& file) {
  if (name == "gpt-2" || name == "gpt2") return {{kGpt2Pattern, "ByteLevel"}};
  // SmolLM (and StarCoder, which llama.cpp groups with it) isolate every digit first.
  if (name == "smollm" || name == "starcoder" || name == "refact")
    return {{R"(\p{N})", "Digits"}, {kGpt2Pattern, "ByteLevel"}};
  if (name == "llama-bpe" || name == "llama3") return {{kLlama3Pattern, "Split"}};
  if (name == "qwen2") return {{kQwen2Pattern, "Split"}};
  fail_at(file, "key 'tokenizer.ggml.pre'",
          "unsupported pre-tokenizer '" + name +
              "' (supported: " + join(pre_tokenizer_names(), ", ") + ")");
}

std::vector<std::string> pre_tokenizer_names() {
  return {"gpt-2", "smollm", "llama-bpe", "qwen2"};
}

// ---------------------------------------------------------------------------------------------
// tokenizer.json

namespace {

std::vector<PreTokenizerStep> parse_pre_tokenizer(const json& node, const std::string& path) {
  const std::string where = "field 'pre_tokenizer'";
  if (node.is_null()) fail_at(path, where, "missing: a byte-level BPE needs a ByteLevel step");
  std::vector<json> steps;
  if (node.value("type", "") == "Sequence") {
    for (const auto& s : node.value("pretokenizers", json::array())) steps.push_back(s);
  } else {
    steps.push_back(node);
  }
  std::vector<PreTokenizerStep> out;
  bool byte_level = false;
  for (const auto& s : steps) {
    std::string type = s.value("type", "");
    if (type == "Digits") {
      if (!s.value("individual_digits", false))
        fail_at(path, where, "Digits without individual_digits is not supported");
      out.push_back({R"(\p{N})", "Digits"});
    } else if (type == "ByteLevel") {
      if (s.value("add_prefix_space", false))
        fail_at(path, where, "ByteLevel with add_prefix_space is not supported");
      if (s.value("use_regex", true)) out.push_back({kGpt2Pattern, "ByteLevel"});
      byte_level = true;
    } else if (type == "Split") {
      if (!s.contains("pattern") || !s["pattern"].contains("Regex") ||
          s.value("behavior", "") != "Isolated" || s.value("invert", false))
        fail_at(path, where, "only Split with a Regex pattern, behavior Isolated, invert false");
      out.push_back({s["pattern"]["Regex"].get<std::string>(), "Split"});
    } else {
      fail_at(path, where, "unsupported pre-tokenizer step '" + type + "'");
    }
  }
  if (!byte_level) fail_at(path, where, "no ByteLevel step: not a byte-level BPE tokenizer");
  return out;
}

}  // namespace

namespace {

BpeVocabulary parse_tokenizer_json(const json& j, const std::string& path);

// The special token a TemplateProcessing post-processor (alone or inside a Sequence) puts before
// a single text, or "".
std::string post_processor_bos(const json& node) {
  if (!node.is_object()) return "";
  if (node.value("type", "") == "Sequence") {
    for (const auto& p : node.value("processors", json::array()))
      if (auto bos = post_processor_bos(p); !bos.empty()) return bos;
    return "";
  }
  if (node.value("type", "") != "TemplateProcessing") return "";
  const json single = node.value("single", json::array());
  if (!single.is_array() || single.empty() || !single[0].is_object() ||
      !single[0].contains("SpecialToken"))
    return "";
  const json& special = single[0]["SpecialToken"];
  return special.is_object() ? special.value("id", "") : "";
}

}  // namespace

BpeVocabulary read_tokenizer_json(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    fail_at(path, "", std::string("not valid JSON: ") + e.what());
  }
  // A field of the wrong JSON type deep inside is one line too, not an escaped json exception.
  try {
    return parse_tokenizer_json(j, path);
  } catch (const json::exception& e) {
    fail_at(path, "", std::string("a field has the wrong type: ") + e.what());
  }
}

namespace {

// BOS/EOS/pad and whether to add BOS: tokenizer_config.json beside `path` names them, and a
// post-processor template in tokenizer.json may add BOS too.
void read_special_tokens(const json& j, const std::string& path, BpeVocabulary& v) {
  // BOS/EOS/pad live in tokenizer_config.json beside it, not in tokenizer.json.
  const auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  if (file_exists(config_path.string())) {
    json c;
    try {
      c = json::parse(read_file(config_path.string()));
    } catch (const json::exception& e) {
      fail_at(config_path.string(), "", std::string("not valid JSON: ") + e.what());
    }
    auto id_of = [&](const char* key) -> int64_t {
      if (!c.contains(key)) return -1;
      std::string content = token_content(c[key]);
      for (int64_t i = 0; i < static_cast<int64_t>(v.tokens.size()); ++i)
        if (!content.empty() && v.tokens[i] == content) return i;
      if (content.empty()) return -1;
      fail_at(config_path.string(), std::string("field '") + key + "'",
              "token '" + content + "' is not in the vocabulary of " + path);
    };
    v.add_bos = c.value("add_bos_token", false);
    v.bos_id = id_of("bos_token");
    v.eos_id = id_of("eos_token");
    v.pad_id = id_of("pad_token");
    v.unk_id = id_of("unk_token");
  }
  // Llama 3's tokenizer adds BOS in tokenizer.json's post-processor (a template that starts with
  // a special token), which HF's encode runs, not through tokenizer_config's add_bos_token.
  const std::string template_bos = post_processor_bos(j.value("post_processor", json()));
  if (!template_bos.empty()) {
    const auto it = std::find(v.tokens.begin(), v.tokens.end(), template_bos);
    if (it == v.tokens.end())
      fail_at(path, "field 'post_processor'",
              "its template starts with '" + template_bos + "', which is not a token");
    v.add_bos = true;
    if (v.bos_id < 0) v.bos_id = it - v.tokens.begin();
  }
}

BpeVocabulary parse_tokenizer_json(const json& j, const std::string& path) {
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    fail_at(path, "field 'model'", "missing");
  const json& model = j["model"];
  std::string type = model.value("type", "");
  if (type != "BPE")
    fail_at(path, "field 'model.type'",
            "unsupported tokenizer model '" + type + "' (supported: byte-level BPE)");
  if (model.value("byte_fallback", false))
    fail_at(path, "field 'model.byte_fallback'", "byte-fallback BPE is not supported");
  BpeVocabulary v;
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    const json& n = j["normalizer"];
    const std::string kind = n.is_object() ? n.value("type", std::string("?")) : "?";
    if (kind != "NFC")
      fail_at(path, "field 'normalizer'",
              "unsupported normalizer '" + kind + "' (supported: none, NFC)");
    v.normalize_nfc = true;
  }
  v.pre_tokenizer = parse_pre_tokenizer(j.value("pre_tokenizer", json()), path);
  v.ignore_merges = model.value("ignore_merges", false);
  if (!model.contains("vocab") || !model["vocab"].is_object())
    fail_at(path, "field 'model.vocab'", "missing or not an object");
  // Ids are bounded before the token table is sized by them: the largest real vocabularies
  // have about 260k tokens, and one absurd id once asked the allocator for petabytes.
  constexpr int64_t kMaxIds = int64_t{1} << 24;
  auto valid_id = [&](const json& id) {
    return id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < kMaxIds;
  };
  int64_t size = 0;
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!valid_id(id))
      fail_at(path, "field 'model.vocab'", "token '" + token + "' has no valid id (0 to 2^24 - 1)");
    size = std::max(size, id.get<int64_t>() + 1);
  }
  for (const auto& a : j.value("added_tokens", json::array())) {
    if (!a.is_object() || !a.contains("id") || !valid_id(a["id"]))
      fail_at(path, "field 'added_tokens'", "an added token needs an id from 0 to 2^24 - 1");
    size = std::max(size, a["id"].get<int64_t>() + 1);
  }
  v.tokens.assign(size, "");
  std::vector<bool> taken(size, false);
  for (const auto& [token, id] : model["vocab"].items()) {
    const int64_t i = id.get<int64_t>();
    if (taken[i])
      fail_at(path, "field 'model.vocab'",
              "id " + std::to_string(i) + " is given to both '" + v.tokens[i] + "' and '" + token +
                  "'");
    taken[i] = true;
    v.tokens[i] = token;
  }
  for (const auto& m : model.value("merges", json::array())) {
    if (m.is_string()) {
      std::string s = m.get<std::string>();
      auto space = s.find(' ', 1);
      if (space == std::string::npos)
        fail_at(path, "field 'model.merges'", "bad merge '" + s + "'");
      v.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      v.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail_at(path, "field 'model.merges'", "a merge must be \"a b\" or [a, b]");
    }
  }
  for (const auto& a : j.value("added_tokens", json::array())) {
    BpeVocabulary::Added added{a.value("id", int64_t{-1}), a.value("content", std::string()),
                               a.value("special", false)};
    if (added.id < 0 || added.content.empty())
      fail_at(path, "field 'added_tokens'", "an added token needs an id and content");
    if (a.value("lstrip", false) || a.value("rstrip", false) || a.value("single_word", false))
      fail_at(path, "added token '" + added.content + "'",
              "lstrip, rstrip and single_word are not supported");
    v.tokens[added.id] = added.content;
    v.added.push_back(added);
  }
  read_special_tokens(j, path, v);
  return v;
}

}  // namespace

namespace {

// ByteLevel offsets, then, for a tokenizer that adds BOS, the template HF's encode follows (as
// Llama 3's tokenizer.json has it).
json post_processor_json(const BpeVocabulary& v) {
  json byte_level = {{"type", "ByteLevel"},
                     {"add_prefix_space", false},
                     {"trim_offsets", false},
                     {"use_regex", true}};
  if (!v.add_bos || v.bos_id < 0 || v.bos_id >= static_cast<int64_t>(v.tokens.size()))
    return byte_level;
  const std::string& bos = v.tokens[v.bos_id];
  auto piece = [&](const char* seq) {
    return json::array({json{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                        json{{"Sequence", {{"id", seq}, {"type_id", 0}}}}});
  };
  json pair = piece("A");
  for (const auto& p : piece("B")) pair.push_back(p);
  json templ = {{"type", "TemplateProcessing"},
                {"single", piece("A")},
                {"pair", pair},
                {"special_tokens", {{bos, {{"id", bos}, {"ids", {v.bos_id}}, {"tokens", {bos}}}}}}};
  return {{"type", "Sequence"}, {"processors", json::array({byte_level, templ})}};
}

}  // namespace

json tokenizer_json(const BpeVocabulary& v) {
  json added = json::array();
  for (const auto& a : v.added)
    added.push_back({{"id", a.id},
                     {"content", a.content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", a.special}});
  json steps = json::array();
  bool byte_level = false;
  for (const auto& s : v.pre_tokenizer) {
    if (s.kind == "Digits") {
      steps.push_back({{"type", "Digits"}, {"individual_digits", true}});
    } else if (s.kind == "ByteLevel") {
      steps.push_back({{"type", "ByteLevel"},
                       {"add_prefix_space", false},
                       {"trim_offsets", true},
                       {"use_regex", true}});
      byte_level = true;
    } else {
      steps.push_back({{"type", "Split"},
                       {"pattern", {{"Regex", s.pattern}}},
                       {"behavior", "Isolated"},
                       {"invert", false}});
    }
  }
  if (!byte_level)
    steps.push_back({{"type", "ByteLevel"},
                     {"add_prefix_space", false},
                     {"trim_offsets", true},
                     {"use_regex", false}});
  json pre = steps.size() == 1 ? steps[0] : json{{"type", "Sequence"}, {"pretokenizers", steps}};
  json vocab = json::object();
  for (size_t id = 0; id < v.tokens.size(); ++id) vocab[v.tokens[id]] = id;
  json merges = json::array();
  for (const auto& [a, b] : v.merges) merges.push_back(json::array({a, b}));
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", v.normalize_nfc ? json{{"type", "NFC"}} : json(nullptr)},
          {"pre_tokenizer", pre},
          {"post_processor", post_processor_json(v)},
          {"decoder",
           {{"type", "ByteLevel"},
            {"add_prefix_space", false},
            {"trim_offsets", true},
            {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", v.ignore_merges},
            {"vocab", vocab},
            {"merges", merges}}}};
}

json tokenizer_config_json(const BpeVocabulary& v, const std::string& chat_template,
                           int64_t model_max_length) {
  auto name = [&](int64_t id) -> json {
    if (id < 0 || id >= static_cast<int64_t>(v.tokens.size())) return nullptr;
    return v.tokens[id];
  };
  json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                 {"add_bos_token", v.add_bos},
                 {"add_eos_token", false},
                 {"clean_up_tokenization_spaces", false},
                 {"model_max_length", model_max_length},
                 {"bos_token", name(v.bos_id)},
                 {"eos_token", name(v.eos_id)},
                 {"pad_token", name(v.pad_id)},
                 {"unk_token", name(v.unk_id)}};
  if (!chat_template.empty()) config["chat_template"] = chat_template;
  return config;
}

// ---------------------------------------------------------------------------------------------
// Encoding and decoding

struct BpeTokenizer::Compiled {
  std::vector<pcre2_code*> patterns;
  ~Compiled() {
    for (auto* p : patterns) pcre2_code_free(p);
  }
};

BpeTokenizer::BpeTokenizer(BpeVocabulary vocab, std::string origin)
    : vocab_(std::move(vocab)),
      origin_(std::move(origin)),
      compiled_(std::make_unique<Compiled>()) {
  if (vocab_.tokens.size() >= (size_t{1} << 31)) fail_at(origin_, "", "vocabulary too large");
  token_ids_.reserve(vocab_.tokens.size());
  for (size_t id = 0; id < vocab_.tokens.size(); ++id)
    token_ids_.emplace(vocab_.tokens[id], static_cast<int64_t>(id));
  // Vocabularies may lack bytes that never occur in their training text (SmolLM2 has no token
  // for 0x04 or for bytes that cannot appear in UTF-8); HF drops such a byte, and so does this.
  byte_ids_.assign(256, -1);
  int bytes_found = 0;
  for (int b = 0; b < 256; ++b) {
    auto it = token_ids_.find(byte_chars()[b]);
    if (it != token_ids_.end()) byte_ids_[b] = it->second, ++bytes_found;
  }
  if (bytes_found < 128)
    fail_at(origin_, "",
            "only " + std::to_string(bytes_found) +
                " of the 256 byte tokens are in the vocabulary: not a byte-level BPE");
  for (size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const auto& [a, b] = vocab_.merges[rank];
    auto ia = token_ids_.find(a), ib = token_ids_.find(b), im = token_ids_.find(a + b);
    if (ia == token_ids_.end() || ib == token_ids_.end() || im == token_ids_.end())
      fail_at(origin_, "merge " + std::to_string(rank),
              "'" + a + " " + b + "' uses or makes a token outside the vocabulary");
    merges_.emplace(pair_key(ia->second, ib->second),
                    std::make_pair(static_cast<int32_t>(rank), im->second));
  }
  for (const auto& step : vocab_.pre_tokenizer) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(step.pattern.c_str()), PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      fail_at(origin_, "pre-tokenizer",
              "regex '" + step.pattern + "' does not compile at " + std::to_string(offset) + ": " +
                  reinterpret_cast<char*>(message));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; matching works without
    compiled_->patterns.push_back(code);
  }
  is_added_.assign(vocab_.tokens.size(), 0);
  for (const auto& a : vocab_.added) is_added_[a.id] = 1;
  // Longer added tokens first, so of two that start at one place the longer wins (as HF does).
  std::stable_sort(vocab_.added.begin(), vocab_.added.end(), [](const auto& x, const auto& y) {
    return x.content.size() > y.content.size();
  });
}

BpeTokenizer::~BpeTokenizer() = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;

int64_t BpeTokenizer::added_token_id(const std::string& content) const {
  for (const auto& a : vocab_.added)
    if (a.content == content) return a.id;
  return -1;
}

namespace {

// Unicode NFC, as HF's NFC normaliser applies it. Text that is not valid UTF-8 (HF's Rust strings
// never are) is left as it is, for the pre-tokeniser to refuse with its one-line error.
std::string nfc(const std::string& text) {
  utf8proc_uint8_t* composed = nullptr;
  const utf8proc_ssize_t size =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &composed,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (size < 0) return text;
  std::string out(reinterpret_cast<char*>(composed), static_cast<size_t>(size));
  std::free(composed);
  return out;
}

}  // namespace

// Merges the adjacent pair of lowest rank until none is left (GPT-2's algorithm).
void BpeTokenizer::encode_piece(const std::string& piece, std::vector<int64_t>& out) const {
  if (vocab_.ignore_merges) {
    std::string mapped;
    for (unsigned char c : piece) mapped += byte_chars()[c];
    if (auto it = token_ids_.find(mapped); it != token_ids_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int64_t> symbols;
  symbols.reserve(piece.size());
  for (unsigned char c : piece)
    if (byte_ids_[c] >= 0) symbols.push_back(byte_ids_[c]);
  while (symbols.size() > 1) {
    int32_t best_rank = std::numeric_limits<int32_t>::max();
    size_t best = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = merges_.find(pair_key(symbols[i], symbols[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best = i;
      }
    }
    if (best_rank == std::numeric_limits<int32_t>::max()) break;
    const int64_t left = symbols[best], right = symbols[best + 1];
    const int64_t merged = merges_.at(pair_key(left, right)).second;
    // Every occurrence of the best pair merges in one left-to-right pass.
    size_t write = 0;
    for (size_t read = 0; read < symbols.size(); ++read) {
      if (read + 1 < symbols.size() && symbols[read] == left && symbols[read + 1] == right) {
        symbols[write++] = merged;
        ++read;
      } else {
        symbols[write++] = symbols[read];
      }
    }
    symbols.resize(write);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
}

// Runs the pre-tokeniser steps in order (each splits every piece of the previous one), then
// BPE on each final piece.
void BpeTokenizer::encode_ordinary(const std::string& text, std::vector<int64_t>& out) const {
  if (text.empty()) return;
  std::vector<std::string> pieces = {vocab_.normalize_nfc ? nfc(text) : text};
  for (auto* code : compiled_->patterns) {
    std::vector<std::string> next;
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(code, nullptr);
    for (const auto& piece : pieces) {
      PCRE2_SIZE start = 0, gap = 0;
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      while (start < piece.size()) {
        int rc = pcre2_match(code, subject, piece.size(), start, 0, match, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          pcre2_match_data_free(match);
          PCRE2_UCHAR message[256];
          pcre2_get_error_message(rc, message, sizeof(message));
          throw Error(origin_ + ": cannot pre-tokenize text: " + reinterpret_cast<char*>(message));
        }
        const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match);
        if (span[1] == span[0]) {  // an empty match: step over one character
          start = span[1] + 1;
          while (start < piece.size() && (static_cast<unsigned char>(piece[start]) & 0xC0) == 0x80)
            ++start;
          continue;
        }
        if (span[0] > gap) next.push_back(piece.substr(gap, span[0] - gap));
        next.push_back(piece.substr(span[0], span[1] - span[0]));
        gap = start = span[1];
      }
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    pcre2_match_data_free(match);
    pieces = std::move(next);
  }
  for (const auto& piece : pieces) encode_piece(piece, out);
}

std::vector<int64_t> BpeTokenizer::encode(const std::string& text, bool parse_special) const {
  std::vector<int64_t> out;
  if (!parse_special || vocab_.added.empty()) {
    encode_ordinary(text, out);
    return out;
  }
  size_t done = 0;
  for (size_t pos = 0; pos < text.size();) {
    const BpeVocabulary::Added* hit = nullptr;
    for (const auto& a : vocab_.added)
      if (text.compare(pos, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      ++pos;
      continue;
    }
    encode_ordinary(text.substr(done, pos - done), out);
    out.push_back(hit->id);
    pos += hit->content.size();
    done = pos;
  }
  encode_ordinary(text.substr(done), out);
  return out;
}

std::string BpeTokenizer::piece(int64_t id) const {
  if (id < 0 || id >= vocab_size()) return "";
  if (is_added_[id]) return vocab_.tokens[id];
  std::string out;
  append_token_bytes(vocab_.tokens[id], out);
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) out += piece(id);
  return out;
}

}  // namespace citeforge::models
