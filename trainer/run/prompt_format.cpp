#include "trainer/run/prompt_format.h"

namespace citeforge::trainer {

std::vector<int64_t> encode_prompt(const models::Tokenizer& tokenizer,
                                   const models::ChatTemplate& chat,
                                   const data::PromptTemplate& prompt,
                                   const data::Example& example) {
  return models::encode_chat_prompt(tokenizer, chat, data::render_prompt(prompt, example));
}

bool fit_prompt(std::vector<int64_t>& prompt, int64_t max_len) {
  if (max_len <= 0 || int64_t(prompt.size()) <= max_len) return false;
  const int64_t head = max_len / 2;
  std::vector<int64_t> cut(prompt.begin(), prompt.begin() + head);
  cut.insert(cut.end(), prompt.end() - (max_len - head), prompt.end());
  prompt = std::move(cut);
  return true;
}

}  // namespace citeforge::trainer
