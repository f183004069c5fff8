#include "models/chat_format.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/error.h"
#include "common/file_io.h"
#include "common/join.h"
#include "models/gguf.h"

namespace citeforge::models {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSmolLM2System =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";
constexpr const char* kQwen25System =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

// ChatML: every turn is <|im_start|>role\n...<|im_end|>\n; an answer ends at <|im_end|>. The
// ChatML formats differ only in a default system line and in what opens the answer.
constexpr const char* kChatMLUser = "<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n";
constexpr const char* kChatMLSystem = "<|im_start|>system\n{system}<|im_end|>\n";

// Llama 3.1's system header, which its template writes in every conversation.
constexpr const char* kLlama3System =
    "<bos><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
    "2023\nToday Date: 26 Jul 2024\n\n";
constexpr const char* kLlama3User =
    "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n{user}<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n";

// Formats as their model cards define them. Llama 2 and Mistral write [INST] as plain text;
// Zephyr closes each turn with the EOS token.
const std::vector<ChatTemplate>& templates() {
  static const std::string chatml_user = kChatMLUser,
                           chatml = std::string(kChatMLSystem) + kChatMLUser;
  static const std::string think = "<think>\n\n</think>\n\n";
  static const std::vector<ChatTemplate> all = {
      {"plain", "<bos>{user}\n", "<bos>{system}\n\n{user}\n", "<eos>"},
      {"llama2", "<bos>[INST] {user} [/INST]",
       "<bos>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]", "<eos>"},
      {"mistral", "<bos>[INST] {user} [/INST]", "<bos>[INST] {system}\n\n{user} [/INST]", "<eos>"},
      {"zephyr", "<bos><|user|>\n{user}<eos>\n<|assistant|>\n",
       "<bos><|system|>\n{system}<eos>\n<|user|>\n{user}<eos>\n<|assistant|>\n", "<eos>"},
      {"chatml", chatml_user, chatml, "<|im_end|>", {"<|im_start|>", "<|im_end|>"}},
      // SmolLM2-Instruct's own template: ChatML that puts this system line first when the
      // conversation has none.
      {"smollm2", "", chatml, "<|im_end|>", {"<|im_start|>", "<|im_end|>"}, kSmolLM2System},
      // Llama 3.1's template (also 3.3's): a system header in every conversation, with the
      // knowledge cut-off and the date it writes when the caller passes none; each message
      // trimmed; a turn ends with <|eot_id|>.
      {"llama3",
       std::string(kLlama3System) + kLlama3User,
       std::string(kLlama3System) + "{system}" + kLlama3User,
       "<|eot_id|>",
       {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"},
       "",
       true},
      // Qwen2 and Qwen2.5: ChatML with Qwen2.5's system line when the conversation has none.
      {"qwen2", "", chatml, "<|im_end|>", {"<|im_start|>", "<|im_end|>"}, kQwen25System},
      // Qwen3 without thinking (enable_thinking=False): the generation prompt carries an empty
      // think block, and an answer follows it.
      {"qwen3",
       chatml_user + think,
       chatml + think,
       "<|im_end|>",
       {"<|im_start|>", "<|im_end|>", "<think>", "</think>"}},
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
  throw Error("unknown chat template '" + name + "' (known: " + join(chat_template_names(), ", ") +
              ")");
}

std::vector<std::string> chat_template_names() {
  std::vector<std::string> names;
  for (const auto& t : templates()) names.push_back(t.name);
  return names;
}

namespace {

// Jinja's `trim`, for the formats whose template applies it to every message.
std::string trimmed(const std::string& text, bool trim) {
  if (!trim) return text;
  const char* space = " \t\n\r\f\v";
  const size_t first = text.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

}  // namespace

std::vector<int64_t> encode_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& user, const std::string& system) {
  const std::string u = trimmed(user, tmpl.trim), s = trimmed(system, tmpl.trim);
  if (s.empty() && !tmpl.default_system.empty())
    return encode_marked(tokenizer, tmpl, tmpl.prompt_with_system, tmpl.default_system, u);
  return encode_marked(tokenizer, tmpl, s.empty() ? tmpl.prompt : tmpl.prompt_with_system, s, u);
}

std::vector<int64_t> encode_chat_answer(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& answer) {
  return encode_marked(tokenizer, tmpl, "{user}" + tmpl.answer_suffix, "",
                       trimmed(answer, tmpl.trim));
}

std::string model_chat_template(const std::string& model_path) {
  if (is_gguf_path(model_path)) return gguf_chat_template(read_gguf(model_path));
  const fs::path dir(model_path);
  const fs::path config = dir / "tokenizer_config.json";
  if (fs::exists(config)) {
    nlohmann::json c;
    try {
      c = nlohmann::json::parse(read_file(config.string()));
    } catch (const nlohmann::json::exception& e) {
      fail_at(config.string(), "", std::string("not valid JSON: ") + e.what());
    }
    const auto& t = c.contains("chat_template") ? c["chat_template"] : nlohmann::json();
    if (t.is_string()) return t.get<std::string>();
    if (t.is_array())  // [{"name": "default", "template": ...}, {"name": "tool_use", ...}]
      for (const auto& entry : t)
        if (entry.is_object() && entry.value("name", "") == "default" &&
            entry.contains("template") && entry["template"].is_string())
          return entry["template"].get<std::string>();
    if (!t.is_null())
      fail_at(config.string(), "field 'chat_template'",
              "neither a template nor a list with one named \"default\"");
  }
  // transformers 5 saves the template beside the config as its own file.
  const fs::path jinja = dir / "chat_template.jinja";
  return fs::exists(jinja) ? read_file(jinja.string()) : "";
}

namespace {

bool has(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

// The system line a ChatML template writes when the conversation has none: the literal text
// between "<|im_start|>system" plus a newline (written as one or as Jinja's "\n") and
// "<|im_end|>"; "" when there is no such literal.
std::string chatml_default_system(const std::string& jinja) {
  static const std::regex literal(R"(<\|im_start\|>system(?:\n|\\n)([^'"<>{}\n\\]+)<\|im_end\|>)");
  std::smatch m;
  return std::regex_search(jinja, m, literal) ? m[1].str() : "";
}

// Whether the template writes text of its own after "<|im_start|>system" and a newline: a
// default system line, perhaps followed by more (a tool preamble), that plain ChatML lacks.
bool writes_system_text(const std::string& jinja) {
  static const std::regex literal(R"(<\|im_start\|>system(?:\n|\\n)[^'"\\])");
  return std::regex_search(jinja, literal);
}

}  // namespace

std::string recognise_chat_format(const std::string& jinja, const std::string& origin) {
  if (jinja.empty()) return "";
  std::string found;
  if (has(jinja, "<|start_header_id|>") && has(jinja, "<|eot_id|>")) {
    // Llama 3.1 and 3.3 write this cut-off and, given no date, this one; 3.2 asks strftime_now
    // for today's, which a fixed format cannot render.
    if (has(jinja, "Cutting Knowledge Date: December 2023") && has(jinja, "\"26 Jul 2024\"") &&
        !has(jinja, "strftime_now"))
      found = "llama3";
  } else if (has(jinja, "<|im_start|>") && !has(jinja, "bos_token") && !has(jinja, "|trim") &&
             !has(jinja, "| trim")) {  // these ChatML formats keep each message as it is
    const std::string system = chatml_default_system(jinja);
    if (has(jinja, "enable_thinking is false") && has(jinja, "<think>\\n\\n</think>\\n\\n") &&
        system.empty())
      found = "qwen3";
    else if (has(jinja, "<think>") || has(jinja, "enable_thinking"))
      found = "";  // another reasoning template: its prompts differ from qwen3's
    else if (system == kSmolLM2System)
      found = "smollm2";
    else if (system == kQwen25System)
      found = "qwen2";
    else if (system.empty() && !writes_system_text(jinja))
      found = "chatml";
  }
  if (found.empty()) {
    fail_at(origin, "chat template",
            "matches none of citeforge's chat formats (" + join(chat_template_names(), ", ") +
                "); set model.chat_format to the one this model was trained with");
  }
  return found;
}

}  // namespace citeforge::models
