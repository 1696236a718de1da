#include "fast/optim/adam.hpp"

#include <cmath>

#include "check.hpp"
#include "fast/core/error.hpp"
#include "fast/core/long_lived.hpp"
#include "fma.hpp"

namespace fast::optim {

namespace {
using detail::madd;

// One step's pointers and float32 scalars, the scalars rounded once from their double values as
// torch does when it applies a double to a float tensor.
struct AdamStep {
  float* p = nullptr;
  const float* g = nullptr;
  float* m = nullptr;  // first moment
  float* v = nullptr;  // second moment
  std::size_t n = 0;
  float weight_decay = 0;  // adam: L2 coefficient
  float decay = 0;         // adamw: 1 - lr * weight_decay
  float beta1 = 0, one_minus_beta1 = 0;
  float beta2 = 0, one_minus_beta2 = 0;
  float sqrt_bias_correction2 = 0;
  float eps = 0;
  float neg_step_size = 0;  // -(lr / (1 - beta1^t))
};

// One pass over p, g, m, v. kL2: Adam's g = g + wd * p; kDecoupled: AdamW's p = p * (1 - lr wd) first.
// torch's kernels: add(alpha) and addcmul are multiply-adds (madd); mul, sqrt, div and addcdiv are not.
template <bool kFused, bool kL2, bool kDecoupled>
[[gnu::always_inline]] inline void adam_pass(const AdamStep& s) {
  float* __restrict p = s.p;
  const float* __restrict g = s.g;
  float* __restrict m = s.m;
  float* __restrict v = s.v;
  for (std::size_t i = 0; i < s.n; ++i) {
    float pi = p[i];
    if constexpr (kDecoupled) pi = pi * s.decay;
    float gi = g[i];
    if constexpr (kL2) gi = madd<kFused>(s.weight_decay, pi, gi);
    const float mi = madd<kFused>(s.one_minus_beta1, gi, m[i] * s.beta1);
    const float vi = madd<kFused>(s.one_minus_beta2 * gi, gi, v[i] * s.beta2);
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / s.sqrt_bias_correction2 + s.eps;
    p[i] = pi + s.neg_step_size * mi / denom;
  }
}

template <bool kFused>
[[gnu::always_inline]] inline void adam_dispatch(const AdamStep& s, bool l2, bool decoupled) {
  if (l2)
    adam_pass<kFused, true, false>(s);
  else if (decoupled)
    adam_pass<kFused, false, true>(s);
  else
    adam_pass<kFused, false, false>(s);
}

void adam_unfused(const AdamStep& s, bool l2, bool decoupled) { adam_dispatch<false>(s, l2, decoupled); }
FAST_OPTIM_FMA_TARGET void adam_fused(const AdamStep& s, bool l2, bool decoupled) {
  adam_dispatch<true>(s, l2, decoupled);
}

// adam_pass without L2, in two passes (Optimizer::take_gradient, apply_taken): the same operations
// on each element, so the same bits.
template <bool kFused>
[[gnu::always_inline]] inline void adam_take(const AdamStep& s) {
  const float* __restrict g = s.g;
  float* __restrict m = s.m;
  float* __restrict v = s.v;
  for (std::size_t i = 0; i < s.n; ++i) {
    const float gi = g[i];
    m[i] = madd<kFused>(s.one_minus_beta1, gi, m[i] * s.beta1);
    v[i] = madd<kFused>(s.one_minus_beta2 * gi, gi, v[i] * s.beta2);
  }
}

template <bool kDecoupled>
[[gnu::always_inline]] inline void adam_apply(const AdamStep& s) {
  float* __restrict p = s.p;
  const float* __restrict m = s.m;
  const float* __restrict v = s.v;
  for (std::size_t i = 0; i < s.n; ++i) {
    float pi = p[i];
    if constexpr (kDecoupled) pi = pi * s.decay;
    const float denom = std::sqrt(v[i]) / s.sqrt_bias_correction2 + s.eps;
    p[i] = pi + s.neg_step_size * m[i] / denom;
  }
}

void take_unfused(const AdamStep& s) { adam_take<false>(s); }
FAST_OPTIM_FMA_TARGET void take_fused(const AdamStep& s) { adam_take<true>(s); }
// No multiply-add here (fast_optim is built with -ffp-contract=off): the same bits whatever the
// CPU, as adam_pass's last lines in either of its targets.
void adam_apply_pass(const AdamStep& s, bool decoupled) {
  if (decoupled)
    adam_apply<true>(s);
  else
    adam_apply<false>(s);
}

// The scalars of step t at rate lr (the moment buffers, p and g are the caller's).
AdamStep adam_scalars(double beta1, double beta2, double eps, double weight_decay, double lr, std::int64_t t) {
  const double bias_correction1 = 1 - std::pow(beta1, t);
  const double bias_correction2 = 1 - std::pow(beta2, t);
  return {
      .weight_decay = static_cast<float>(weight_decay),
      .decay = static_cast<float>(1 - lr * weight_decay),
      .beta1 = static_cast<float>(beta1),
      .one_minus_beta1 = static_cast<float>(1 - beta1),
      .beta2 = static_cast<float>(beta2),
      .one_minus_beta2 = static_cast<float>(1 - beta2),
      .sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2)),
      .eps = static_cast<float>(eps),
      .neg_step_size = static_cast<float>(-(lr / bias_correction1)),
  };
}

}  // namespace

Adam::Adam(const OptimizerOptions& options, std::size_t numel)
    : numel_(numel),
      weight_decay_(options.weight_decay),
      beta1_(options.beta1),
      beta2_(options.beta2),
      eps_(options.eps),
      fused_(detail::use_fused_multiply_add()),
      exp_avg_(core::Buffer::long_lived(numel, core::DType::f32)),
      exp_avg_sq_(core::Buffer::long_lived(numel, core::DType::f32)) {
  if (options.name == "adam") {
    decoupled_ = false;
  } else if (options.name == "adamw") {
    decoupled_ = true;
  } else {
    FAST_THROW(InvalidArgument, "Adam: OptimizerOptions.name: expected adam or adamw, got '{}'", options.name);
  }
  const std::string rule = "optimizer = " + options.name;  // the setting that chose it, as a config line
  using detail::check_option;
  constexpr std::string_view kOwner = detail::kOptimizerOptions;
  check_option(std::isfinite(options.lr) && options.lr >= 0, kOwner, "lr", rule, "a finite value >= 0", options.lr);
  check_option(std::isfinite(options.weight_decay) && options.weight_decay >= 0, kOwner, "weight_decay", rule,
               "a finite value >= 0", options.weight_decay);
  check_option(options.beta1 >= 0 && options.beta1 < 1, kOwner, "beta1", rule, "a value in [0, 1)", options.beta1);
  check_option(options.beta2 >= 0 && options.beta2 < 1, kOwner, "beta2", rule, "a value in [0, 1)", options.beta2);
  check_option(std::isfinite(options.eps) && options.eps > 0, kOwner, "eps", rule, "a finite value > 0", options.eps);
}

std::string_view Adam::name() const { return decoupled_ ? "adamw" : "adam"; }

void Adam::make_state_resident() noexcept {
  if (resident_) return;
  core::populate_pages(exp_avg_.data(), numel_ * sizeof(float));
  core::populate_pages(exp_avg_sq_.data(), numel_ * sizeof(float));
  resident_ = true;
}

void Adam::step(std::span<float> params, std::span<const float> grads, double lr) {
  detail::check_step(name(), params, grads, numel_, lr);
  if (taken_) FAST_THROW(InvalidUsage, "{} step: a gradient taken before was not applied yet", name());
  make_state_resident();
  const std::int64_t t = steps_ + 1;
  AdamStep s = adam_scalars(beta1_, beta2_, eps_, weight_decay_, lr, t);
  s.p = params.data();
  s.g = grads.data();
  s.m = static_cast<float*>(exp_avg_.data());
  s.v = static_cast<float*>(exp_avg_sq_.data());
  s.n = numel_;
  const bool decay = weight_decay_ != 0;
  if (numel_ > 0) {
    if (fused_)
      adam_fused(s, decay && !decoupled_, decay && decoupled_);
    else
      adam_unfused(s, decay && !decoupled_, decay && decoupled_);
  }
  steps_ = t;
}

}  // namespace fast::optim

namespace fast::optim {

std::vector<std::span<float>> Adam::state() {
  return {std::span<float>(static_cast<float*>(exp_avg_.data()), numel_),
          std::span<float>(static_cast<float*>(exp_avg_sq_.data()), numel_)};
}

void Adam::set_steps_taken(std::int64_t steps) {
  FAST_ENFORCE(steps >= 0, "{}: steps taken must be >= 0, got {}", name(), steps);
  steps_ = steps;
  taken_ = false;
}

void Adam::take_gradient(std::span<const float> grads) {
  if (!takes_gradient_first()) Optimizer::take_gradient(grads);
  detail::check_split(name(), "take_gradient", "grads", grads, numel_, taken_, false);
  make_state_resident();
  AdamStep s = adam_scalars(beta1_, beta2_, eps_, weight_decay_, 0.0, steps_ + 1);  // m, v: no rate
  s.g = grads.data();
  s.m = static_cast<float*>(exp_avg_.data());
  s.v = static_cast<float*>(exp_avg_sq_.data());
  s.n = numel_;
  if (fused_)
    take_fused(s);
  else
    take_unfused(s);
  taken_ = true;
}

void Adam::apply_taken(std::span<float> params, double lr) {
  if (!takes_gradient_first()) Optimizer::apply_taken(params, lr);
  detail::check_split(name(), "apply_taken", "params", params, numel_, taken_, true);
  detail::check_lr(name(), "apply_taken", lr);
  AdamStep s = adam_scalars(beta1_, beta2_, eps_, weight_decay_, lr, steps_ + 1);
  s.p = params.data();
  s.m = static_cast<float*>(exp_avg_.data());
  s.v = static_cast<float*>(exp_avg_sq_.data());
  s.n = numel_;
  adam_apply_pass(s, decoupled_ && weight_decay_ != 0);
  taken_ = false;
  ++steps_;
}

}  // namespace fast::optim
