// How a model is asked: the tokenizer, the chat format and the prompt template together, and
// how an example becomes the prompt tokens that SFT, evaluation and PPO's rollouts all use.
#pragma once

#include <cstdint>
#include <vector>

#include "data/example.h"
#include "data/prompt_template.h"
#include "models/chat_format.h"
#include "models/tokenizer.h"

namespace citeforge::trainer {

struct PromptFormat {
  const models::Tokenizer* tokenizer = nullptr;
  models::ChatTemplate chat;
  data::PromptTemplate prompt;
};

// What the model sees for an example: the rendered prompt inside the chat format.
std::vector<int64_t> encode_prompt(const models::Tokenizer& tokenizer,
                                   const models::ChatTemplate& chat,
                                   const data::PromptTemplate& prompt,
                                   const data::Example& example);

// A prompt longer than max_len tokens keeps its first max_len / 2 tokens (BOS, instruction)
// and its last ones (question, answer cue); the sources in between are what is lost. Returns
// whether it cut.
bool fit_prompt(std::vector<int64_t>& prompt, int64_t max_len);

}  // namespace citeforge::trainer
