// Evaluation of the current policy on a test set: greedy answers to every example's prompt,
// generated in length-sorted batches (batched output equals one-at-a-time output), then scored
// with rewards/ into an EvalRecord (trainer/eval/eval_record.h) for the archive and results.json.
#pragma once

#include <string>
#include <vector>

#include "data/example.h"
#include "models/llama.h"
#include "trainer/run/prompt_format.h"
#include "trainer/run/run_context.h"

namespace citeforge::trainer {

struct GeneratedAnswers {
  std::vector<std::string> prompts;  // the rendered user messages
  std::vector<std::string> answers;
};

// Greedy answers (up to `max_new_tokens`, stopping at EOS) for every example, in input order.
// `label` names the work on the progress line. With a `partial_path`, answers already recorded
// there are kept and each new batch's answers are appended to it (trainer/eval/partial_answers.h).
// `share_prompt_prefix`: models::SamplingOptions::share_prompt_prefix for every batch.
GeneratedAnswers generate_answers(models::LlamaForCausalLM& model, const PromptFormat& format,
                                  const std::vector<data::Example>& examples,
                                  int64_t max_new_tokens, int64_t batch_size,
                                  const std::string& label, const std::string& partial_path = "",
                                  bool share_prompt_prefix = false);

// Evaluates the run's current model on every test set as (stage, epoch), unless the archive of
// that evaluation already exists: generations go to eval/<stage>-<epoch>/<test set>.h5 and the
// aggregates to results.json. An interrupted test set resumes from its partial answers. Prints
// one summary line per test set.
void evaluate_all(RunContext& run, const std::string& stage, int epoch,
                  const std::string& checkpoint);

}  // namespace citeforge::trainer
