#include "fast/optim/adam.hpp"

#include <cmath>

#include "check.hpp"
#include "fast/core/error.hpp"
#include "fma.hpp"

namespace fast::optim {

namespace {
using detail::madd;

// One step's pointers and float32 scalars, the scalars rounded once from their double values as
// torch does when it applies a double to a float tensor.
struct AdamStep {
  float* p;
  const float* g;
  float* m;  // first moment
  float* v;  // second moment
  std::size_t n;
  float weight_decay;  // adam: L2 coefficient
  float decay;         // adamw: 1 - lr * weight_decay
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float sqrt_bias_correction2;
  float eps;
  float neg_step_size;  // -(lr / (1 - beta1^t))
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
  const std::string_view rule = options.name;
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

void Adam::step(std::span<float> params, std::span<const float> grads, double lr) {
  detail::check_step(name(), params, grads, numel_, lr);
  const std::int64_t t = steps_ + 1;
  const double bias_correction1 = 1 - std::pow(beta1_, t);
  const double bias_correction2 = 1 - std::pow(beta2_, t);
  const AdamStep s{
      .p = params.data(),
      .g = grads.data(),
      .m = static_cast<float*>(exp_avg_.data()),
      .v = static_cast<float*>(exp_avg_sq_.data()),
      .n = numel_,
      .weight_decay = static_cast<float>(weight_decay_),
      .decay = static_cast<float>(1 - lr * weight_decay_),
      .beta1 = static_cast<float>(beta1_),
      .one_minus_beta1 = static_cast<float>(1 - beta1_),
      .beta2 = static_cast<float>(beta2_),
      .one_minus_beta2 = static_cast<float>(1 - beta2_),
      .sqrt_bias_correction2 = static_cast<float>(std::sqrt(bias_correction2)),
      .eps = static_cast<float>(eps_),
      .neg_step_size = static_cast<float>(-(lr / bias_correction1)),
  };
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
}

}  // namespace fast::optim
