#include "data/synth_teacher.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/error.h"

namespace citeforge::data {

namespace {

double binomial(int n, int j, double p) {
  double coefficient = 1;
  for (int i = 1; i <= j; ++i) coefficient = coefficient * (n - j + i) / i;
  return coefficient * std::pow(p, j) * std::pow(1 - p, n - j);
}

// Expected precision of one example with n > 0 relevant documents: j kept citations and w wrong
// ones give j / (j + w); citing nothing scores 0 (docs/design.md §3).
double expected_precision(int n, const TeacherPlan& plan) {
  double total = 0;
  for (int j = 1; j <= n; ++j) {
    total += binomial(n, j, plan.keep) * ((1 - plan.add) + plan.add * j / (j + 1.0));
  }
  return total;
}

int pick_index(const std::vector<int>& candidates, Rng& rng) {
  return candidates[static_cast<std::size_t>(uniform_below(rng, candidates.size()))];
}

}  // namespace

std::pair<double, double> expected_teacher_scores(const TeacherPlan& plan, double no_relevant_rate,
                                                  int min_relevant, int max_relevant) {
  const int choices = max_relevant - min_relevant + 1;
  double precision = 0, recall = 0;
  for (int n = min_relevant; n <= max_relevant; ++n) {
    const double weight = (1 - no_relevant_rate) / choices;
    if (n == 0) {
      precision += weight * (1 - plan.add);
      recall += weight * (1 - plan.add);
    } else {
      precision += weight * expected_precision(n, plan);
      recall += weight * plan.keep;
    }
  }
  // No relevant document: abstaining scores P = R = 1, a wrong citation P = R = 0.
  precision += no_relevant_rate * (1 - plan.add);
  recall += no_relevant_rate * (1 - plan.add);
  return {precision, recall};
}

TeacherPlan calibrate_teacher(double precision, double recall, double no_relevant_rate,
                              int min_relevant, int max_relevant) {
  // Recall is linear in (keep, add), so for each `add` on a fine grid `keep` follows in closed
  // form; pick the `add` whose precision is closest to the target.
  const double unanswerable =
      no_relevant_rate +
      (min_relevant == 0 ? (1 - no_relevant_rate) / (max_relevant - min_relevant + 1) : 0.0);
  TeacherPlan best;
  double best_error = 1e9;
  std::pair<double, double> best_scores{0, 0};
  constexpr int kSteps = 20000;
  for (int step = 0; step <= kSteps; ++step) {
    TeacherPlan plan;
    plan.add = static_cast<double>(step) / kSteps;
    if (unanswerable >= 1) {
      plan.keep = 1;
    } else {
      plan.keep = (recall - unanswerable * (1 - plan.add)) / (1 - unanswerable);
      if (plan.keep < 0 || plan.keep > 1) continue;
    }
    auto scores = expected_teacher_scores(plan, no_relevant_rate, min_relevant, max_relevant);
    double error = std::abs(scores.first - precision) + std::abs(scores.second - recall);
    if (error < best_error) {
      best_error = error;
      best = plan;
      best_scores = scores;
    }
  }
  if (best_error > 2e-3) {
    std::ostringstream what;
    what << "teacher_precision " << precision << " and teacher_recall " << recall
         << " cannot both be reached with no_relevant_rate " << no_relevant_rate
         << " (closest: precision " << best_scores.first << ", recall " << best_scores.second
         << ")";
    throw Error(what.str());
  }
  return best;
}

TeacherChoice teacher_citations(const std::vector<TeacherSource>& sources, const TeacherPlan& plan,
                                Rng& rng) {
  std::vector<int> relevant, seemingly, seemingly_same_attribute, other;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const int key = static_cast<int>(i) + 1;
    switch (sources[i].label) {
      case Label::relevant:
        relevant.push_back(key);
        break;
      case Label::seemingly_relevant:
        seemingly.push_back(key);
        if (sources[i].same_attribute) seemingly_same_attribute.push_back(key);
        break;
      default:
        other.push_back(key);
        break;
    }
  }
  // Fixed draw order: keep decisions in key order, then the wrong-citation coin, then its target.
  TeacherChoice choice;
  for (int key : relevant)
    if (bernoulli(rng, plan.keep)) choice.keys.push_back(key);
  if (bernoulli(rng, plan.add) && !(seemingly.empty() && other.empty())) {
    const bool prefer_seemingly = !seemingly.empty() && (other.empty() || bernoulli(rng, 0.75));
    if (!prefer_seemingly) {
      choice.wrong_key = pick_index(other, rng);
    } else if (relevant.empty() && !seemingly_same_attribute.empty()) {
      choice.wrong_key = pick_index(seemingly_same_attribute, rng);
    } else {
      choice.wrong_key = pick_index(seemingly, rng);
    }
    choice.keys.push_back(choice.wrong_key);
    std::sort(choice.keys.begin(), choice.keys.end());
  }
  choice.abstain = relevant.empty() && choice.keys.empty();
  return choice;
}

}  // namespace citeforge::data
