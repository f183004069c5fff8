#include "attribution/yes_no_judge.h"

#include <algorithm>

#include "attribution/model_scores.h"
#include "common/error.h"
#include "data/example.h"

namespace citeforge::attribution {

std::optional<double> yes_no_log_odds(
    YesNoJudge& judge, const std::string& question,
    const std::vector<std::pair<std::string, std::string>>& texts) {
  const auto& tok = *judge.tokenizer;
  data::Example example;
  example.question = question;
  example.citation_style = judge.prompt.citation_style;
  for (const auto& [name, text] : texts)
    example.sources.push_back({int(example.sources.size()) + 1, name, text, data::Label::unknown});
  const auto prompt =
      models::encode_chat_prompt(tok, judge.chat, data::render_prompt(judge.prompt, example));
  // The first token of each reply: the verdict is the model's first word, whatever follows it.
  std::vector<std::vector<int64_t>> replies = {models::encode_chat_answer(tok, judge.chat, "Yes"),
                                               models::encode_chat_answer(tok, judge.chat, "No")};
  for (auto& r : replies) r.resize(1);
  if (replies[0] == replies[1])
    throw Error("the judge's replies 'Yes' and 'No' begin with the same token in this tokenizer");
  const std::size_t longest = 1;
  if (int64_t(prompt.size() + longest) > judge.model->config.context_length()) return std::nullopt;
  const bool was_training = judge.model->is_training();
  judge.model->eval();
  const auto log_probs = continuation_log_probs(judge.model, prompt, replies);
  if (was_training) judge.model->train();
  return log_probs[0] - log_probs[1];
}

}  // namespace citeforge::attribution
