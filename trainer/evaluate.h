// Evaluation of the current policy on a test set: greedy answers to every example's prompt,
// generated in length-sorted batches (batched output equals one-at-a-time output), then scored
// with rewards/ into an EvalRecord (trainer/eval_record.h) for the archive and results.json.
#pragma once

#include <string>
#include <vector>

#include "data/example.h"
#include "data/prompt_template.h"
#include "models/llama.h"
#include "models/tokenizer.h"

namespace citeforge::trainer {

// How a model is asked: tokenizer, chat format and prompt template together.
struct PromptFormat {
  const models::Tokenizer* tokenizer = nullptr;
  models::ChatTemplate chat;
  data::PromptTemplate prompt;
};

struct GeneratedAnswers {
  std::vector<std::string> prompts;  // the rendered user messages
  std::vector<std::string> answers;
};

// Greedy answers (up to `max_new_tokens`, stopping at EOS) for every example, in input order.
// `label` names the work on the progress line.
GeneratedAnswers generate_answers(models::LlamaForCausalLM& model, const PromptFormat& format,
                                  const std::vector<data::Example>& examples,
                                  int64_t max_new_tokens, int64_t batch_size,
                                  const std::string& label);

}  // namespace citeforge::trainer
