// Chat formats: how each model family was fine-tuned to see a conversation, as data (markers
// around the system and user text), and how a model's own Jinja chat template is recognised as
// one of them. The formats of Llama 3.1, Qwen2.5, Qwen3 and SmolLM2 are checked against what
// their templates render through transformers (tests/models/test_chat_formats.cpp).
#pragma once

#include <string>
#include <vector>

#include "models/tokenizer.h"

namespace citeforge::models {

// A chat format as data: `prompt` is the text around the user message, with the markers
// {system} and {user}, <bos> / <eos> for the tokenizer's BOS and EOS, and the strings in
// `specials` for special (added) tokens by name; `answer_suffix` closes an assistant turn in
// training data.
struct ChatTemplate {
  std::string name;
  std::string prompt;              // used when there is no system message
  std::string prompt_with_system;  // used when there is one
  std::string answer_suffix;
  std::vector<std::string> specials = {};  // e.g. "<|im_start|>": must be added tokens
  std::string default_system = {};         // the system message the model's own template adds
  bool trim = false;  // the template strips whitespace around each message (Llama 3's does)
};

// The built-in formats: "plain", "llama2", "mistral", "zephyr", "chatml" (no default system
// line), "smollm2" (ChatML with SmolLM2's default system line), "llama3" (Llama 3.1's template,
// with the knowledge cut-off and the "26 Jul 2024" date it writes when given none), "qwen2"
// (ChatML with Qwen2.5's default system line) and "qwen3" (ChatML whose generation prompt ends
// in the empty think block of enable_thinking=False). Unknown names are an Error.
const ChatTemplate& chat_template(const std::string& name);
std::vector<std::string> chat_template_names();

// Token ids of the prompt for `user` (and optional `system`) under `tmpl`. Text between special
// tokens is encoded chunk by chunk, each with SentencePiece's dummy prefix (HF's legacy mode).
// A template special token the tokenizer lacks is an Error naming both.
std::vector<int64_t> encode_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& user, const std::string& system = "");
// Token ids of an assistant answer followed by the template's answer suffix.
std::vector<int64_t> encode_chat_answer(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& answer);

// The Jinja chat template a model carries, or "" when it has none: a GGUF file's
// `tokenizer.chat_template`, or in a model directory tokenizer_config.json's `chat_template` (a
// string, or the entry named "default" of a list) or chat_template.jinja.
std::string model_chat_template(const std::string& model_path);

// The built-in format a Jinja chat template renders, recognised by the text only that format's
// template has (Llama 3.1's header tokens and fixed date, Qwen3's think block, the default system
// line of a ChatML template). "" for an empty template. A template that matches none is an Error
// naming `origin` and the formats citeforge has, so the user sets model.chat_format.
std::string recognise_chat_format(const std::string& jinja, const std::string& origin);

}  // namespace citeforge::models
