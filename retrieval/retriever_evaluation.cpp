#include "retrieval/retriever_evaluation.h"

#include <cmath>

#include "retrieval/ranking_metrics.h"

namespace citeforge::retrieval {
namespace {

double mean(const std::vector<double>& values) {
  if (values.empty()) return std::nan("");
  double sum = 0;
  for (double v : values) sum += v;
  return sum / double(values.size());
}

}  // namespace

RetrieverEvaluation evaluate_retriever(const Corpus& corpus,
                                       const std::vector<data::Example>& examples, std::size_t k) {
  RetrieverEvaluation out;
  std::vector<double> recall, precision, f1;
  for (const auto& e : examples) {
    out.rankings.push_back(retrieve(corpus, e.question, k));
    const auto gold = gold_passages(corpus, e);
    int relevant = 0;
    for (const auto& s : e.sources) relevant += s.label == data::Label::relevant;
    out.gold_outside += relevant - int(gold.size());
    const auto s = score_ranking(out.rankings.back(), gold, k);
    precision.push_back(s.precision);
    if (s.recall) {
      recall.push_back(*s.recall);
      f1.push_back(*s.f1);
    } else {
      ++out.without_gold;
    }
  }
  out.recall = mean(recall);
  out.precision = mean(precision);
  out.f1 = mean(f1);
  return out;
}

}  // namespace citeforge::retrieval
