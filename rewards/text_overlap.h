// Answer correctness by word overlap with reference answers, as HAGRID evaluates it (docs/design.md
// §3): ROUGE-L and BLEU, written to the definitions of the Python packages the papers use and
// checked against them on fixtures (scripts/make_text_overlap_fixtures.py):
//  - ROUGE-L as rouge-score computes it without a stemmer: lower-cased runs of [a-z0-9] as
//    tokens, the longest common subsequence over the candidate's and the reference's lengths;
//    with several references, the one of highest F.
//  - BLEU as sacrebleu computes it by default: the 13a tokenizer (mteval-v13a's, via PCRE2),
//    clipped n-gram matches up to 4 against every reference, the closest reference length for
//    the brevity penalty, the "exp" smoothing of mteval for orders without a match; sentence
//    BLEU uses the effective order (sacrebleu's sentence_bleu), corpus BLEU sums the statistics.
// No C++ library in Debian computes either the way these packages do, hence our own.
#pragma once

#include <string>
#include <vector>

namespace citeforge::rewards {

struct RougeScore {
  double precision = 0, recall = 0, f = 0;
};

std::vector<std::string> rouge_tokens(const std::string& text);
RougeScore rouge_l(const std::string& candidate, const std::string& reference);
// The reference of highest F; no references is a score of 0.
RougeScore rouge_l(const std::string& candidate, const std::vector<std::string>& references);

// mteval-v13a tokenization, the tokens joined by single spaces.
std::string tokenize_13a(const std::string& text);

// BLEU's sufficient statistics for one candidate.
struct BleuStats {
  std::vector<double> correct = std::vector<double>(4, 0.0), total = std::vector<double>(4, 0.0);
  double candidate_length = 0, reference_length = 0;
  BleuStats& operator+=(const BleuStats& other);
};

BleuStats bleu_stats(const std::string& candidate, const std::vector<std::string>& references);

// BLEU in [0, 100] from (summed) statistics.
double bleu_score(const BleuStats& stats, bool effective_order);

// sacrebleu's sentence_bleu and corpus_bleu with one list of references per candidate.
double sentence_bleu(const std::string& candidate, const std::vector<std::string>& references);
double corpus_bleu(const std::vector<std::string>& candidates,
                   const std::vector<std::vector<std::string>>& references);

}  // namespace citeforge::rewards
