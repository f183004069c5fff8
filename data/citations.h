// Citation parsing for answers (docs/design.md §3): numeric `[3]`, `[1][2]`, `[1, 2]`, `[1-3]`, and
// named `(Author, Year, p. N)` groups, `;`-separated, matched to the example's source names.
//
// The parser reads only the answer and the source *names*, never the source texts, so a
// citation that appears inside a source's text (a paper's own references, a Wikipedia "[12]")
// can never be mistaken for a citation made by the answer. The other side of that choice: when
// an answer copies such an inner citation into its own text, it is the answer that now makes
// the claim, and since it names nothing in the prompt it counts as an invalid citation. A
// reader of the answer cannot trace it to a provided source, which is what the metric checks.
//
// Named matching rules, tried in order for each `;`-separated part of a parenthesised group
// (the whole group is tried first, because a few real source names contain a `;`):
//  1. exact match after normalisation (normalize_source_name): case, whitespace, punctuation,
//     `&` = `and`, `p.12` = `p. 12` = `page 12`, a leading "The" dropped;
//  2. author + year (+ page if the citation gives one): teachers abbreviate, e.g.
//     "(Smith et al., 2019)" for "Smith et al., 2019, p. 54". The author must match exactly
//     (after normalisation) or be the acronym of the source's author ("NASA" for "National
//     Aeronautics and Space Administration"); "Smith" never matches "Smith et al." because real
//     prompts hold both as different sources. A page given on both sides must be equal;
//  3. narrative citations, "According to Gupta et al. (2018, p. 42)": a part holding only a
//     year (and page) takes its author from the words right before the parenthesis; the
//     longest source author that ends those words wins.
// Every source the rule selects is cited (a name shared by several sources maps to all). A
// part that looks like a citation (author, then a year, then optionally a page) but selects no
// source is invalid. Anything else in parentheses, "(MHC)", "(1977)" after a film title, is
// prose and ignored.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "data/example.h"

namespace citeforge::data {

// One citation: the text that names it and the source keys it refers to (empty = invalid).
struct Citation {
  std::string text;       // as written, trimmed, e.g. "Smith et al., 2019" or "3" or "1-3"
  std::vector<int> keys;  // Source::key values, ascending; empty when it maps to no source
  bool valid() const { return !keys.empty(); }
};

// A bracket or parenthesis group that holds at least one citation.
struct CitationGroup {
  std::size_t begin = 0;  // byte offset of the opening `(` or `[`
  std::size_t end = 0;    // one past the closing `)` or `]`
  std::vector<Citation> citations;
  bool well_formed() const;  // non-empty and every citation valid
};

// Everything the metrics need from one answer.
struct ParsedCitations {
  std::vector<CitationGroup> groups;  // in order of appearance
  std::set<int> cited;                // D: distinct valid cited source keys
  std::set<std::string> invalid;      // distinct invalid citations, by normalised text
};

// Parses `answer` in `style` against `sources` (their keys and names).
ParsedCitations parse_citations(const std::string& answer, const std::vector<Source>& sources,
                                CitationStyle style);

// Numeric style only: keys 1..n_sources are valid. Exposed for tests and fuzzing.
ParsedCitations parse_numeric_citations(const std::string& answer, int n_sources);

// The answer with every citation group removed and the space left before punctuation closed:
// "Crabs are eaten [1][3]." -> "Crabs are eaten." Prose in parentheses stays.
std::string strip_citations(const std::string& answer, const ParsedCitations& parsed);

// The answer with its cited sources said in words at the end instead of cited:
// "Crabs are eaten [1][3]." -> "Crabs are eaten, as documents 1 and 3 say." An answer that
// cites nothing comes back stripped only. Nothing in the result parses as a citation.
std::string citations_in_words(const std::string& answer, const ParsedCitations& parsed);

// How an answer in `style` cites `keys`: "[1][3]" (numeric) or "(Name one; Name three)" (named,
// the sources' names as the prompt gives them).
std::string citation_text(const std::vector<Source>& sources, CitationStyle style,
                          const std::vector<int>& keys);

// `sentence` with `citation` placed where answers put it: before a final `.`, `!` or `?`, after
// a space: "Crabs are eaten." -> "Crabs are eaten [1]."
std::string cite_sentence(const std::string& sentence, const std::string& citation);

// The comparison form of a source name or cited name (rule 1 above), e.g.
// "The Cooley & Mitchell, 2007, p.112" -> "cooley and mitchell 2007 p 112".
std::string normalize_source_name(const std::string& name);

}  // namespace citeforge::data
