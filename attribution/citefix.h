// Citation correction after generation (CiteFix, docs/design.md §4b): an answer is split into
// factual points at its citations, and each point's citations are re-assigned among the
// prompt's documents to the ones that score best for it, keeping how many the point cited.
//
// The lexical methods live here; each takes the point's text and returns one score per source:
//  - keyword: the paper's token intersection, |words(point) ∩ words(document)|, on lower-cased
//    words without stop words (attribution/stop_words.h);
//  - keyword_bm25: keyword + w * BM25(question, document), with BM25 over the prompt's own
//    documents, mildly preferring documents that answer the question (the paper's §3.2; it
//    leaves w out, so w is a setting).
// The methods that read the generating model (bertscore, attention, ask_model) live in
// attribution/model_scores.h and share the re-assignment below.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/citations.h"
#include "data/example.h"

namespace citeforge::attribution {

enum class FixMethod { keyword, keyword_bm25, bertscore, attention, ask_model };

// A method's name; anything else throws an Error listing the methods.
FixMethod parse_fix_method(const std::string& name);
// The method of that name, or nothing.
std::optional<FixMethod> find_fix_method(const std::string& name);
const char* to_string(FixMethod method);
// bertscore, attention and ask_model need the model (attribution/model_scores.h).
bool needs_model(FixMethod method);

struct FixOptions {
  FixMethod method = FixMethod::keyword;
  double bm25_weight = 0.25;  // w of keyword_bm25
};

// One factual point: the text an answer attributes to one run of citation groups (groups with
// nothing but spaces and punctuation between them), and those groups.
struct FactualPoint {
  std::size_t text_begin = 0, text_end = 0;  // the point's words, before its citations
  std::size_t cite_begin = 0, cite_end = 0;  // its citation groups, first to last
  std::vector<int> cited;                    // distinct valid source keys, ascending
  int invalid = 0;                           // citations that name no source
  // How many documents the point cites: each [n] (a range [1-3] counts its numbers) and each
  // distinct name once, even where a data set gives several sources the same name.
  int citations = 0;
};

// The factual points of an answer in order. Text after the last citation belongs to no point.
std::vector<FactualPoint> factual_points(const std::string& answer,
                                         const data::ParsedCitations& parsed);

// One score per source of `example` (in its order) for a point's text.
std::vector<double> point_scores(const data::Example& example, const std::string& point_text,
                                 const FixOptions& options);

struct FixedAnswer {
  std::string answer;
  int points = 0;        // factual points with at least one citation
  int changed = 0;       // points whose cited sources changed
  bool skipped = false;  // the method could not read this answer; it is returned as it was
  std::string why;       // why it was skipped
};

// The answer with each cited point's citations replaced by its best-scoring sources under
// `scores` (a row per point of `points`, a score per source of `example`), as many as it cited,
// among the sources marked in `candidates`. The rules of fix_citations below apply.
FixedAnswer reassign_citations(const data::Example& example, const std::string& answer,
                               const std::vector<FactualPoint>& points,
                               const std::vector<std::vector<double>>& scores,
                               const std::vector<bool>& candidates);

// The answer with each point's citations replaced by its best-scoring sources, as many as it
// cited (capped at the sources that have text). Ties keep the sources the point already cited,
// then the lower key. A point whose text shares nothing with any document keeps its citations,
// and so does an answer without citations or an example without sources. Citations are
// rewritten in the example's style: [n] per source, or (Name; Name) with the sources' names.
// Lexical methods only.
FixedAnswer fix_citations(const data::Example& example, const std::string& answer,
                          const FixOptions& options);

}  // namespace citeforge::attribution
