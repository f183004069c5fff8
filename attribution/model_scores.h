// Citation correction read from the generating model itself (CiteFix's model methods,
// docs/design.md §4b). The answer is fed back to the model after its own prompt, and each
// factual point (attribution/citefix.h) scores every source by
//  - attention: the share of attention the point's tokens put on the source's span of the
//    prompt, summed over heads and layers (the paper's Appendix 6.1 proof of concept), read
//    from that one forward pass;
//  - bertscore: BERTScore-style greedy matching (each point token's best cosine among the
//    source's tokens, averaged over the point) on one decoder block's hidden states from the
//    same pass, centred on the sequence's mean first (a decoder's states share a large common
//    direction that makes every cosine near 1);
//  - ask_model: the model's probability of answering "[k]" when asked which numbered document
//    supports the point (the paper's lightweight LLM method), with the question in a template
//    file (configs/templates/citefix_ask.yaml) and one prompt pass per point, calibrated by the
//    probabilities the model gives for a statement that says nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attribution/citefix.h"
#include "data/prompt_template.h"
#include "models/chat_format.h"
#include "models/llama.h"
#include "models/tokenizer.h"

namespace citeforge::attribution {

struct ModelReader {
  models::LlamaForCausalLM model{nullptr};
  const models::Tokenizer* tokenizer = nullptr;
  models::ChatTemplate chat;
  data::PromptTemplate prompt;  // how the answers' prompts were rendered
  data::PromptTemplate ask;     // ask_model's question: {sources} numbered, {question} the point
  int64_t hidden_layer = -1;    // bertscore's decoder block (0-based); -1: the middle one
};

// The scores of each point of `points` for every source of `example` (one row per point, in
// the example's source order), or nothing when the prompt and answer do not fit the model's
// positions or the answer cannot be located in its own tokens; `why` then says which. A source
// whose text cannot be found in the prompt's tokens scores 0.
std::optional<std::vector<std::vector<double>>> model_point_scores(
    ModelReader& reader, FixMethod method, const data::Example& example, const std::string& answer,
    const std::vector<FactualPoint>& points, std::string* why);

// The log-probability of each continuation after `prompt` (token ids), from one pass over the
// prompt whose keys and values every continuation reuses. ask_model's scoring.
std::vector<double> continuation_log_probs(models::LlamaForCausalLM& model,
                                           const std::vector<int64_t>& prompt,
                                           const std::vector<std::vector<int64_t>>& continuations);

// fix_citations (attribution/citefix.h) with a model method. An answer the model cannot read
// (see model_point_scores) keeps its citations and is counted in `skipped`.
FixedAnswer fix_citations_with_model(ModelReader& reader, const data::Example& example,
                                     const std::string& answer, FixMethod method);

}  // namespace citeforge::attribution
