// Per-answer metrics (docs/design.md §3): RAGE citation precision / recall / F1, answer length,
// distinct citations, the evidence-QA paper's source quality and format quality, HAGRID's
// citation overlap against a reference answer, and the PPO reward (P + R) / 2.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/citations.h"
#include "data/example.h"

namespace citeforge::rewards {

// How citations that map to no source count. `penalize` (default) treats them as cited but
// wrong, so a policy cannot game precision with bogus ids; `ignore` sets I = 0 everywhere,
// RAGE's original reporting behaviour.
enum class InvalidCitations { penalize, ignore };

const char* to_string(InvalidCitations mode);
// "penalize" or "ignore"; anything else is citeforge::Error naming `where`.
InvalidCitations parse_invalid_citations(const std::string& text, const std::string& where);

struct MetricOptions {
  InvalidCitations invalid_citations = InvalidCitations::penalize;
};

struct AnswerMetrics {
  double precision = 0;
  double recall = 0;
  double f1 = 0;
  double reward = 0;           // (precision + recall) / 2
  int answer_length = 0;       // words, split on any whitespace
  int distinct_citations = 0;  // |D|
  // Distinct invalid citations found in the answer. Reported as found even under `ignore`,
  // where the formulas use I = 0, so a report still shows how many there were.
  int invalid_citations = 0;
  double source_quality = 0;  // 0 or 1
  // The reading of the evidence-QA paper's Table 1 "Source." column that reproduces its
  // published numbers (reverse-engineered from them; the paper's Eq. 1 is `source_quality`):
  // 1 unless the answer cites a source labelled irrelevant or seemingly relevant. Abstaining and
  // citing names that match no source both pass, which `source_quality` fails.
  double source_quality_paper = 0;
  double format_quality = 0;  // share of sentences ending in a well-formed citation
  // The chance reference: the expected value of each citation metric for an answer that cites
  // as many distinct documents (valid or invalid ones, at most all of them) as this one, drawn
  // uniformly at random from the example's sources. A gain over it is evidence location; a
  // gain that moves it too is a change in how many documents are cited.
  double chance_precision = 0;
  double chance_recall = 0;
  double chance_f1 = 0;
  double chance_reward = 0;
  double chance_source_quality = 0;
  double chance_source_quality_paper = 0;
  // Against a reference answer's valid citations, when one is given.
  std::optional<double> overlap_precision;
  std::optional<double> overlap_recall;
};

// The metrics by their report names, in report order ("precision", "recall", "f1", "reward",
// "answer_length", "distinct_citations", "invalid_citations", "source_quality",
// "source_quality_paper", "format_quality", "chance_precision", "chance_recall", "chance_f1",
// "chance_reward", "chance_source_quality", "chance_source_quality_paper", then "overlap_precision"
// and "overlap_recall" when present). One list, so per-example files, summaries and tables all name
// and order them the same way.
std::vector<std::pair<std::string, double>> named_values(const AnswerMetrics& metrics);

// Scores `answer` for `example` (its sources, labels and citation style). With `reference`,
// the citation overlap against that answer's valid citations is filled in.
AnswerMetrics score_answer(const data::Example& example, const std::string& answer,
                           const MetricOptions& options = {},
                           const std::optional<std::string>& reference = std::nullopt);

// The RAGE formulas with the docs/design.md §3 edge cases, from counts: `cited_relevant` = |D ∩ R|,
// `cited` = |D|, `invalid` = I (already 0 under `ignore`), `relevant` = |R|.
struct PrecisionRecall {
  double precision = 0;
  double recall = 0;
};
PrecisionRecall precision_recall(int cited_relevant, int cited, int invalid, int relevant);
double f1_score(double precision, double recall);

// The expected precision, recall, F1 and source quality of citing `cited` distinct documents
// drawn uniformly without replacement from `sources` documents of which `relevant` are
// relevant (`cited` is clipped to `sources`), under the same edge cases as precision_recall.
// Exact, not sampled: the hits follow a hypergeometric law, and precision (h / k), recall
// (h / r) and F1 (2h / (k + r)) are all linear in the hits h.
// `source_quality_paper` is the chance that no drawn document is irrelevant (1 when none is
// drawn), counting every non-relevant document as irrelevant.
struct ChanceReference {
  double precision = 0, recall = 0, f1 = 0, source_quality = 0, source_quality_paper = 0;
};
ChanceReference chance_reference(int cited, int sources, int relevant);

// Words of `text`, splitting on ASCII and Unicode whitespace (NBSP, thin space, ...).
int count_words(const std::string& text);

// Byte ranges [begin, end) of the sentences of `answer`: a sentence ends at `.`, `!` or `?`
// followed by whitespace, outside parentheses and brackets, and not after an abbreviation such
// as "et al." or "p."; text after the last terminator is a sentence too.
std::vector<std::pair<std::size_t, std::size_t>> split_sentences(const std::string& answer);
// The sentences of `answer` as text, trimmed of surrounding whitespace, the blank ones left out.
std::vector<std::string> sentences_of(const std::string& answer);

// Share of sentences ending in a well-formed citation group (every citation in it valid). An
// answer that cites nothing at all is an abstention; its format is right (1) exactly when the
// example has no relevant source, so correct abstentions are not punished for lacking
// citations the template forbids them to make.
double format_quality(const std::string& answer, const data::ParsedCitations& citations,
                      int relevant_count);

// Source quality: 1 if (|D| > 0, I = 0 and no cited source is irrelevant or seemingly
// relevant) or (|R| = 0 and the answer cites nothing), else 0.
double source_quality(const data::Example& example, const data::ParsedCitations& citations,
                      int invalid_count);

// The evidence-QA paper's source quality: 0 if a cited source is labelled irrelevant or
// seemingly relevant, else 1 (sources labelled `unknown` never fail it).
double source_quality_paper(const data::Example& example, const data::ParsedCitations& citations);

}  // namespace citeforge::rewards
