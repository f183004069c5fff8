#include "trainer/report/correlation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"

namespace citeforge::trainer {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The continued fraction of I_x(a, b) (Numerical Recipes' betacf), evaluated with the modified
// Lentz method; it converges fast for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr int kMaxIterations = 1000;
  constexpr double kEpsilon = 1e-16;
  constexpr double kTiny = 1e-300;
  double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < kEpsilon) return h;
  }
  return h;  // not reached for the arguments the tables use (a, b <= a few hundred)
}

}  // namespace

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !std::isfinite(a) || !std::isfinite(b))
    throw Error("incomplete beta: a and b must be positive, got a = " + std::to_string(a) +
                ", b = " + std::to_string(b));
  if (!(x >= 0 && x <= 1))
    throw Error("incomplete beta: x must be in [0, 1], got " + std::to_string(x));
  if (x == 0) return 0;
  if (x == 1) return 1;
  double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  double front = std::exp(log_front);
  // Use the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges slowly.
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0)) throw Error("t distribution: degrees of freedom must be positive");
  if (std::isnan(t)) return kNaN;
  if (std::isinf(t)) return 0;
  return regularized_incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

PearsonResult pearson(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    throw Error("pearson: " + std::to_string(x.size()) + " x values but " +
                std::to_string(y.size()) + " y values");
  PearsonResult out;
  out.n = x.size();
  out.r = out.p = kNaN;
  if (out.n < 3) return out;
  double n = static_cast<double>(out.n), mean_x = 0, mean_y = 0;
  for (std::size_t i = 0; i < out.n; ++i) {
    mean_x += x[i];
    mean_y += y[i];
  }
  mean_x /= n;
  mean_y /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < out.n; ++i) {
    double dx = x[i] - mean_x, dy = y[i] - mean_y;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx == 0 || syy == 0) return out;
  // Rounding can push |r| a hair past 1.
  out.r = std::max(-1.0, std::min(1.0, sxy / std::sqrt(sxx * syy)));
  double df = n - 2;
  // t^2 = r^2 df / (1 - r^2), so df / (df + t^2) = 1 - r^2: no division by zero at |r| = 1.
  out.p = regularized_incomplete_beta(df / 2, 0.5, 1 - out.r * out.r);
  return out;
}

}  // namespace citeforge::trainer
