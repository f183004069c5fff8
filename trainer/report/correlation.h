// Pearson correlation with its two-sided p-value, as the evidence-QA paper's Table 3 reports
// between the in-distribution and each out-of-distribution test set across checkpoints. The
// p-value comes from Student's t distribution through the regularized incomplete beta function,
// implemented here so the tables need no statistics library.
#pragma once

#include <cstddef>
#include <vector>

namespace citeforge::trainer {

// I_x(a, b) for a, b > 0 and x in [0, 1], by the continued fraction (modified Lentz), accurate
// to about 1e-14. Arguments out of range are citeforge::Error.
double regularized_incomplete_beta(double a, double b, double x);

// P(|T| >= |t|) for T ~ Student's t with `df` > 0 degrees of freedom.
double student_t_two_sided_p(double t, double df);

struct PearsonResult {
  double r = 0;       // NaN when undefined (fewer than 3 pairs or a constant series)
  double p = 0;       // two-sided, H0: no correlation; NaN when r is
  std::size_t n = 0;  // pairs used
};

// r of the pairs (x[i], y[i]) and its p-value with n - 2 degrees of freedom (scipy.stats.pearsonr
// gives the same). Inputs of different lengths are citeforge::Error.
PearsonResult pearson(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace citeforge::trainer
