#include "retrieval/ranking_metrics.h"

#include <algorithm>
#include <map>
#include <set>

namespace citeforge::retrieval {

RankingScores score_ranking(const std::vector<std::size_t>& ranked,
                            const std::vector<std::size_t>& gold, std::size_t k) {
  const std::set<std::size_t> wanted(gold.begin(), gold.end());
  std::set<std::size_t> retrieved;
  for (std::size_t i = 0; i < ranked.size() && i < k; ++i) retrieved.insert(ranked[i]);
  double hits = 0;
  for (auto p : retrieved) hits += wanted.count(p);
  RankingScores s;
  s.precision = retrieved.empty() ? 0.0 : hits / double(retrieved.size());
  if (!wanted.empty()) {
    s.recall = hits / double(wanted.size());
    s.f1 =
        s.precision + *s.recall > 0 ? 2 * s.precision * *s.recall / (s.precision + *s.recall) : 0.0;
  }
  return s;
}

std::vector<std::size_t> reciprocal_rank_fusion(
    const std::vector<std::vector<std::size_t>>& rankings, double c) {
  std::map<std::size_t, double> fused;
  for (const auto& ranking : rankings)
    for (std::size_t r = 0; r < ranking.size(); ++r) fused[ranking[r]] += 1.0 / (c + double(r + 1));
  std::vector<std::size_t> out;
  for (const auto& [p, score] : fused) out.push_back(p);
  std::stable_sort(out.begin(), out.end(),
                   [&](std::size_t a, std::size_t b) { return fused[a] > fused[b]; });
  return out;
}

}  // namespace citeforge::retrieval
