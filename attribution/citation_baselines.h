// Citations made by a rule instead of a trained model, so that a table shows what lexical
// matching alone (or citing indiscriminately) scores beside the model: the rule re-cites the
// base model's own answers, whose text stays, after their citations are removed. Each sentence
// (rewards::split_sentences) gets one citation group:
//   cite_bm25:  the prompt's document that scores best for the sentence under BM25 over the
//               prompt's documents (a sentence sharing no term with any stays uncited);
//   cite_all:   every document of the prompt;
//   cite_first: the prompt's first document.
// An answer without a sentence (empty) stays empty.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/example.h"

namespace citeforge::attribution {

enum class CitationBaseline { bm25, all, first };

// "cite_bm25", "cite_all", "cite_first" and back; an unknown name gives nothing.
const char* to_string(CitationBaseline baseline);
std::optional<CitationBaseline> find_citation_baseline(const std::string& name);
const std::vector<CitationBaseline>& citation_baselines();

// `answer` cited by `baseline` among `example`'s sources, in the example's citation style.
std::string cite_by_baseline(const data::Example& example, const std::string& answer,
                             CitationBaseline baseline);

}  // namespace citeforge::attribution
