#include "trainer/ppo/ppo_math.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "common/error.h"

namespace citeforge::trainer {

namespace {

std::string shape_of(const torch::Tensor& x) {
  std::ostringstream out;
  out << x.sizes();
  return out.str();
}

[[noreturn]] void fail(const std::string& fn, const std::string& what) {
  throw Error(fn + ": " + what);
}

void require_defined(const std::string& fn, const std::string& name, const torch::Tensor& x) {
  if (!x.defined()) fail(fn, "tensor '" + name + "' is undefined");
}

void require_dims(const std::string& fn, const std::string& name, const torch::Tensor& x,
                  int64_t dims) {
  require_defined(fn, name, x);
  if (x.dim() != dims) {
    fail(fn, "tensor '" + name + "' has shape " + shape_of(x) + ", expected " +
                 std::to_string(dims) + " dimensions");
  }
}

// `x` must have exactly the shape of `ref` (no broadcasting: a [B] tensor where [B, T] is
// expected is a bug in the caller, not something to stretch).
void require_same_shape(const std::string& fn, const std::string& name, const torch::Tensor& x,
                        const std::string& ref_name, const torch::Tensor& ref) {
  require_defined(fn, name, x);
  if (x.sizes() != ref.sizes()) {
    fail(fn, "tensor '" + name + "' has shape " + shape_of(x) + ", expected " + shape_of(ref) +
                 " like '" + ref_name + "'");
  }
}

void require_finite_param(const std::string& fn, const std::string& name, double v) {
  if (!std::isfinite(v)) fail(fn, name + " must be finite (got " + std::to_string(v) + ")");
}

void require_positive(const std::string& fn, const std::string& name, double v) {
  if (!(v > 0.0) || !std::isfinite(v)) {
    fail(fn, name + " must be finite and > 0 (got " + std::to_string(v) + ")");
  }
}

void require_unit_interval(const std::string& fn, const std::string& name, double v) {
  if (!(v >= 0.0 && v <= 1.0))
    fail(fn, name + " must be in [0, 1] (got " + std::to_string(v) + ")");
}

// fp16/bf16/integers -> fp32; fp32 and fp64 unchanged (to() returns the same tensor then, so
// autograd sees no extra node).
torch::Tensor as_float(const torch::Tensor& x) {
  if (x.scalar_type() == torch::kFloat64 || x.scalar_type() == torch::kFloat32) return x;
  return x.to(torch::kFloat32);
}

torch::Tensor as_bool(const torch::Tensor& mask) {
  return mask.scalar_type() == torch::kBool ? mask : mask.ne(0);
}

// x with its padded positions set to 0, whatever they held (NaN included), and with a zero
// gradient there.
torch::Tensor clean(const torch::Tensor& x, const torch::Tensor& mask_bool) {
  return as_float(x).masked_fill(mask_bool.logical_not(), 0.0);
}

int64_t count_of(const torch::Tensor& mask_bool) {
  return mask_bool.sum().item<int64_t>();
}

// The [B, T] mask of a function whose reference tensor `ref` is [B, T].
torch::Tensor checked_mask(const std::string& fn, const torch::Tensor& mask,
                           const std::string& ref_name, const torch::Tensor& ref) {
  require_same_shape(fn, "mask", mask, ref_name, ref);
  return as_bool(mask);
}

}  // namespace

// ---- masks and checks ------------------------------------------------------------------------

torch::Tensor masked_sum(const torch::Tensor& x, const torch::Tensor& mask) {
  require_defined("masked_sum", "x", x);
  auto m = checked_mask("masked_sum", mask, "x", x);
  return clean(x, m).sum();
}

torch::Tensor masked_sum(const torch::Tensor& x, const torch::Tensor& mask, int64_t dim) {
  require_defined("masked_sum", "x", x);
  auto m = checked_mask("masked_sum", mask, "x", x);
  if (dim < -x.dim() || dim >= x.dim()) {
    fail("masked_sum", "dim " + std::to_string(dim) + " is out of range for shape " + shape_of(x));
  }
  return clean(x, m).sum(dim);
}

torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask) {
  require_defined("masked_mean", "x", x);
  auto m = checked_mask("masked_mean", mask, "x", x);
  const auto n = count_of(m);
  if (n == 0) fail("masked_mean", "'mask' selects no element, the mean is undefined");
  return clean(x, m).sum() / double(n);
}

torch::Tensor masked_var(const torch::Tensor& x, const torch::Tensor& mask) {
  require_defined("masked_var", "x", x);
  auto m = checked_mask("masked_var", mask, "x", x);
  const auto n = count_of(m);
  if (n < 2) {
    fail("masked_var", "'mask' selects " + std::to_string(n) +
                           " element(s); the unbiased variance needs at least 2");
  }
  auto xc = clean(x, m);
  auto mean = xc.sum() / double(n);
  auto centered = (xc - mean).masked_fill(m.logical_not(), 0.0);
  return centered.pow(2).sum() / double(n - 1);
}

bool all_finite(const torch::Tensor& x) {
  if (!x.defined()) return true;
  if (!x.is_floating_point() && !x.is_complex()) return true;
  return torch::isfinite(x).all().item<bool>();
}

void require_finite(const torch::Tensor& x, const std::string& what) {
  if (all_finite(x)) return;
  const auto bad = torch::isfinite(x).logical_not().sum().item<int64_t>();
  throw Error(what + ": " + std::to_string(bad) + " of " + std::to_string(x.numel()) +
              " values are not finite (nan or inf)");
}

// ---- rewards ---------------------------------------------------------------------------------

torch::Tensor kl_per_token(const torch::Tensor& logprobs, const torch::Tensor& ref_logprobs,
                           KlEstimator estimator) {
  require_defined("kl_per_token", "logprobs", logprobs);
  require_same_shape("kl_per_token", "ref_logprobs", ref_logprobs, "logprobs", logprobs);
  auto d = as_float(logprobs) - as_float(ref_logprobs);  // log p - log p_ref
  switch (estimator) {
    case KlEstimator::k1:
      return d;
    case KlEstimator::k3:
      // r = p_ref / p = exp(-d); (r - 1) - log r = expm1(-d) + d. expm1 keeps the small-d
      // case (policy close to the reference, the usual one) accurate.
      return torch::expm1(-d) + d;
  }
  fail("kl_per_token", "unknown estimator");
}

torch::Tensor token_rewards(const torch::Tensor& scores, const torch::Tensor& kl,
                            const torch::Tensor& mask, double beta) {
  const std::string fn = "token_rewards";
  require_dims(fn, "kl", kl, 2);
  require_dims(fn, "scores", scores, 1);
  if (scores.size(0) != kl.size(0)) {
    fail(fn, "tensor 'scores' has shape " + shape_of(scores) + ", expected [" +
                 std::to_string(kl.size(0)) + "] (one score per row of 'kl' " + shape_of(kl) + ")");
  }
  auto m = checked_mask(fn, mask, "kl", kl);
  require_finite_param(fn, "beta", beta);
  require_finite(scores, fn + ": tensor 'scores'");
  torch::NoGradGuard no_grad;

  const auto per_row = m.sum(1);
  const auto empty = per_row.eq(0).nonzero();
  if (empty.size(0) > 0) {
    fail(fn, "row " + std::to_string(empty[0][0].item<int64_t>()) +
                 " of 'mask' has no response token, so its score has nowhere to go");
  }
  auto rewards = clean(kl, m) * (-beta);
  // Last real position of each row: the largest (index + 1) among its real tokens.
  const auto T = kl.size(1);
  auto positions =
      torch::arange(1, T + 1, torch::TensorOptions().dtype(torch::kLong).device(kl.device()));
  auto last = (m.to(torch::kLong) * positions).argmax(1, /*keepdim=*/true);
  rewards.scatter_add_(1, last, as_float(scores).to(rewards.scalar_type()).unsqueeze(1));
  require_finite(rewards, fn + ": rewards at real tokens (is 'kl' finite there?)");
  return rewards;
}

// ---- advantages ------------------------------------------------------------------------------

GaeResult gae(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask,
              double gamma, double lambda) {
  const std::string fn = "gae";
  require_dims(fn, "rewards", rewards, 2);
  require_same_shape(fn, "values", values, "rewards", rewards);
  auto m = checked_mask(fn, mask, "rewards", rewards);
  require_unit_interval(fn, "gamma", gamma);
  require_unit_interval(fn, "lambda", lambda);
  torch::NoGradGuard no_grad;

  auto r = clean(rewards, m);
  auto v = clean(values, m).to(r.scalar_type());
  const auto T = r.size(1);
  std::vector<torch::Tensor> columns(T);
  auto next_value = torch::zeros({r.size(0)}, r.options());
  auto next_advantage = torch::zeros({r.size(0)}, r.options());
  for (int64_t t = T - 1; t >= 0; --t) {
    auto v_t = v.select(1, t);
    auto delta = r.select(1, t) + gamma * next_value - v_t;
    // A masked position ends the episode: its advantage is 0 and nothing flows back across it
    // (after EOS this is exactly "no bootstrapping").
    auto a_t =
        (delta + gamma * lambda * next_advantage).masked_fill(m.select(1, t).logical_not(), 0.0);
    columns[t] = a_t;
    next_advantage = a_t;
    next_value = v_t;  // already 0 where masked
  }
  auto advantages = torch::stack(columns, 1);
  return {advantages, advantages + v};
}

torch::Tensor whiten(const torch::Tensor& x, const torch::Tensor& mask, bool shift_mean) {
  const std::string fn = "whiten";
  require_defined(fn, "x", x);
  auto m = checked_mask(fn, mask, "x", x);
  auto mean = masked_mean(x, m);
  auto var = masked_var(x, m);
  auto out = (clean(x, m) - mean) * torch::rsqrt(var + 1e-8);
  if (!shift_mean) out = out + mean;
  return out.masked_fill(m.logical_not(), 0.0);
}

// ---- losses ----------------------------------------------------------------------------------

PolicyLoss policy_loss(const torch::Tensor& logprobs_new, const torch::Tensor& logprobs_old,
                       const torch::Tensor& advantages, const torch::Tensor& mask,
                       double clip_range) {
  const std::string fn = "policy_loss";
  require_dims(fn, "logprobs_new", logprobs_new, 2);
  require_same_shape(fn, "logprobs_old", logprobs_old, "logprobs_new", logprobs_new);
  require_same_shape(fn, "advantages", advantages, "logprobs_new", logprobs_new);
  auto m = checked_mask(fn, mask, "logprobs_new", logprobs_new);
  require_positive(fn, "clip_range", clip_range);

  // Cleaning first keeps NaN/Inf of padded positions out of the forward pass and the gradient.
  auto log_ratio = clean(logprobs_new, m) - clean(logprobs_old, m).detach();
  auto adv = clean(advantages, m).detach();
  auto ratio = torch::exp(log_ratio);
  auto unclipped = -adv * ratio;
  auto clipped = -adv * torch::clamp(ratio, 1.0 - clip_range, 1.0 + clip_range);
  PolicyLoss out;
  out.loss = masked_mean(torch::max(unclipped, clipped), m);

  torch::NoGradGuard no_grad;
  out.clip_fraction = masked_mean(clipped.gt(unclipped).to(torch::kFloat64), m).item<double>();
  out.approx_kl = 0.5 * masked_mean(log_ratio.pow(2), m).item<double>();
  out.approx_kl_k3 = masked_mean(torch::expm1(log_ratio) - log_ratio, m).item<double>();
  out.ratio_mean = masked_mean(ratio, m).item<double>();
  out.ratio_max_deviation =
      torch::where(m, (ratio - 1).abs(), torch::zeros_like(ratio)).max().item<double>();
  return out;
}

ValueLoss value_loss(const torch::Tensor& values_new, const torch::Tensor& values_old,
                     const torch::Tensor& returns, const torch::Tensor& mask,
                     double clip_range_value) {
  const std::string fn = "value_loss";
  require_dims(fn, "values_new", values_new, 2);
  require_same_shape(fn, "values_old", values_old, "values_new", values_new);
  require_same_shape(fn, "returns", returns, "values_new", values_new);
  auto m = checked_mask(fn, mask, "values_new", values_new);
  require_positive(fn, "clip_range_value", clip_range_value);

  auto v = clean(values_new, m);
  auto v_old = clean(values_old, m).detach();
  auto target = clean(returns, m).detach();
  // clamp(v, v_old - eps, v_old + eps) rather than v_old + clamp(v - v_old, ...): inside the
  // range it returns v bit for bit, so an unclipped token is never counted as clipped by
  // rounding.
  auto v_clipped = torch::clamp(v, v_old - clip_range_value, v_old + clip_range_value);
  auto unclipped = (v - target).pow(2);
  auto clipped = (v_clipped - target).pow(2);
  ValueLoss out;
  out.loss = 0.5 * masked_mean(torch::max(unclipped, clipped), m);
  torch::NoGradGuard no_grad;
  out.clip_fraction = masked_mean(clipped.gt(unclipped).to(torch::kFloat64), m).item<double>();
  return out;
}

torch::Tensor entropy_per_token(const torch::Tensor& logits) {
  require_dims("entropy_per_token", "logits", logits, 3);
  auto logp = torch::log_softmax(as_float(logits), -1);
  auto p = logp.exp();
  // p * log p is taken as 0 where p = 0 (a -inf logit), where the plain product is NaN.
  return -(p * logp.masked_fill(p.eq(0), 0.0)).sum(-1);
}

torch::Tensor entropy_from_logits(const torch::Tensor& logits, const torch::Tensor& mask) {
  const std::string fn = "entropy_from_logits";
  require_dims(fn, "logits", logits, 3);
  require_defined(fn, "mask", mask);
  if (mask.dim() != 2 || mask.size(0) != logits.size(0) || mask.size(1) != logits.size(1)) {
    fail(fn, "tensor 'mask' has shape " + shape_of(mask) + ", expected [" +
                 std::to_string(logits.size(0)) + ", " + std::to_string(logits.size(1)) +
                 "] (the first two dimensions of 'logits' " + shape_of(logits) + ")");
  }
  // Padded rows of logits are replaced by zeros first, so NaN there reaches neither the value
  // nor the gradient (log_softmax's backward would spread it otherwise).
  auto m = as_bool(mask);
  return masked_mean(entropy_per_token(logits.masked_fill(m.logical_not().unsqueeze(-1), 0.0)), m);
}

double explained_variance(const torch::Tensor& values, const torch::Tensor& returns,
                          const torch::Tensor& mask) {
  const std::string fn = "explained_variance";
  require_dims(fn, "values", values, 2);
  require_same_shape(fn, "returns", returns, "values", values);
  auto m = checked_mask(fn, mask, "values", values);
  torch::NoGradGuard no_grad;
  auto r = clean(returns, m).to(torch::kFloat64);
  auto residual = r - clean(values, m).to(torch::kFloat64);
  // Biased variances: the 1/n versus 1/(n-1) factor cancels in the ratio, and n = 1 then gives
  // Var(R) = 0, hence NaN, rather than an error.
  auto biased_var = [&](const torch::Tensor& x) {
    auto mean = masked_mean(x, m);
    return masked_mean((x - mean).pow(2), m).item<double>();
  };
  const double var_returns = biased_var(r);
  if (var_returns == 0.0) return std::nan("");
  return 1.0 - biased_var(residual) / var_returns;
}

// ---- KL coefficient --------------------------------------------------------------------------

void KlController::update(double current_kl, int64_t n_steps) {
  const std::string fn = "KL controller";
  if (!std::isfinite(current_kl)) {
    fail(fn, "current KL is " + std::to_string(current_kl) + " (the policy update diverged)");
  }
  if (n_steps < 0) fail(fn, "n_steps must be >= 0 (got " + std::to_string(n_steps) + ")");
  if (!adaptive) return;
  const double error = std::clamp(current_kl / target - 1.0, -0.2, 0.2);
  const double factor = 1.0 + error * double(n_steps) / double(horizon);
  if (!(factor > 0.0)) {
    fail(fn, "a batch of " + std::to_string(n_steps) + " sequences against horizon " +
                 std::to_string(horizon) +
                 " would make beta non-positive; the horizon must be well above the batch size");
  }
  beta *= factor;
}

KlController fixed_kl_controller(double beta) {
  if (!(beta >= 0.0) || !std::isfinite(beta)) {
    fail("KL controller", "beta must be finite and >= 0 (got " + std::to_string(beta) + ")");
  }
  KlController c;
  c.beta = beta;
  c.adaptive = false;
  return c;
}

KlController adaptive_kl_controller(double initial_beta, double target, int64_t horizon) {
  KlController c = fixed_kl_controller(initial_beta);
  require_positive("KL controller", "target", target);
  if (horizon <= 0) {
    fail("KL controller", "horizon must be > 0 (got " + std::to_string(horizon) + ")");
  }
  c.adaptive = true;
  c.target = target;
  c.horizon = horizon;
  return c;
}

bool kl_early_stop(double approx_kl, double target_kl, double factor) {
  require_positive("kl_early_stop", "target_kl", target_kl);
  require_positive("kl_early_stop", "factor", factor);
  // Written so that NaN stops too: a NaN KL means the update has already gone wrong.
  return !(approx_kl <= factor * target_kl);
}

}  // namespace citeforge::trainer
