// A model asked a yes/no question about texts, read as the log-odds of its first reply token:
// log P("Yes") - log P("No"). The question is a prompt template (data/prompt_template.h) whose
// {question} and named {sources} carry the texts, so the wording lives in a file a user can
// change (configs/templates/). Used for LLM-retEval's judge (do two answers say the same?) and
// the evidence-QA paper's attributability (does a source support a sentence?).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/prompt_template.h"
#include "models/chat_format.h"
#include "models/llama.h"
#include "models/tokenizer.h"

namespace citeforge::attribution {

struct YesNoJudge {
  models::LlamaForCausalLM model{nullptr};
  const models::Tokenizer* tokenizer = nullptr;
  models::ChatTemplate chat;
  data::PromptTemplate prompt;  // {question} and {sources} (each source "{name}: {text}")
};

// The judge's log-odds of "Yes" over "No" for `question` with `texts` as the sources, named as
// given; nothing when the prompt does not fit the model's positions.
std::optional<double> yes_no_log_odds(
    YesNoJudge& judge, const std::string& question,
    const std::vector<std::pair<std::string, std::string>>& texts);

}  // namespace citeforge::attribution
