// How good a ranking of passages is against a question's gold passages (LLM-retEval's
// retrieval-side numbers, next to the answer-side ones), and reciprocal rank fusion for
// combining rankings (HAGRID's generate-then-retrieve, one ranking per answer sentence).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace citeforge::retrieval {

struct RankingScores {
  // Undefined (nullopt) for a question without a gold passage: it cannot be recalled.
  std::optional<double> recall;
  double precision = 0;  // hits over the passages retrieved (0 when none were)
  std::optional<double> f1;
};

// Scores of the first k of `ranked` against `gold` (passage positions; duplicates count once).
// A k larger than the ranking takes what there is.
RankingScores score_ranking(const std::vector<std::size_t>& ranked,
                            const std::vector<std::size_t>& gold, std::size_t k);

// Reciprocal rank fusion: each passage scores sum over rankings of 1 / (c + rank), rank from 1;
// returns passages by fused score, ties by the lower position. c = 60 as in Cormack et al.
std::vector<std::size_t> reciprocal_rank_fusion(
    const std::vector<std::vector<std::size_t>>& rankings, double c = 60.0);

}  // namespace citeforge::retrieval
