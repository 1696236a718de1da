#include "fast/optim/sgd.hpp"

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
struct SgdStep {
  float* p = nullptr;
  const float* g = nullptr;
  float* b = nullptr;  // momentum buffer; null for plain SGD
  std::size_t n = 0;
  float wd = 0, mu = 0, one_minus_dampening = 0, neg_lr = 0;
  bool momentum = false, decay = false, first = false, nesterov = false;
};

// Plain SGD, one pass: d = g + wd * p (when decaying); p = p + (-lr) * d.
template <bool kFused, bool kDecay>
[[gnu::always_inline]] inline void sgd_pass(float* __restrict p, const float* __restrict g, std::size_t n, float wd,
                                            float neg_lr) {
  for (std::size_t i = 0; i < n; ++i) {
    float d = g[i];
    if constexpr (kDecay) d = madd<kFused>(wd, p[i], d);
    p[i] = madd<kFused>(neg_lr, d, p[i]);
  }
}

// SGD with momentum buffer b, one pass. kFirst: b = d (torch clones the first update into the buffer),
// else b = b * mu + (1 - dampening) * d. Then d = b (momentum) or d = d + mu * b (nesterov).
template <bool kFused, bool kDecay, bool kFirst, bool kNesterov>
[[gnu::always_inline]] inline void momentum_pass(float* __restrict p, const float* __restrict g, float* __restrict b,
                                                 std::size_t n, float wd, float mu, float omd, float neg_lr) {
  for (std::size_t i = 0; i < n; ++i) {
    float d = g[i];
    if constexpr (kDecay) d = madd<kFused>(wd, p[i], d);
    float buf;
    if constexpr (kFirst) {
      buf = d;
    } else {
      buf = madd<kFused>(omd, d, b[i] * mu);
    }
    b[i] = buf;
    if constexpr (kNesterov) {
      d = madd<kFused>(mu, buf, d);
    } else {
      d = buf;
    }
    p[i] = madd<kFused>(neg_lr, d, p[i]);
  }
}

template <bool kFused, bool kDecay, bool kFirst>
[[gnu::always_inline]] inline void momentum_nesterov(const SgdStep& s) {
  if (s.nesterov)
    momentum_pass<kFused, kDecay, kFirst, true>(s.p, s.g, s.b, s.n, s.wd, s.mu, s.one_minus_dampening, s.neg_lr);
  else
    momentum_pass<kFused, kDecay, kFirst, false>(s.p, s.g, s.b, s.n, s.wd, s.mu, s.one_minus_dampening, s.neg_lr);
}

template <bool kFused>
[[gnu::always_inline]] inline void sgd_dispatch(const SgdStep& s) {
  if (!s.momentum) {
    if (s.decay)
      sgd_pass<kFused, true>(s.p, s.g, s.n, s.wd, s.neg_lr);
    else
      sgd_pass<kFused, false>(s.p, s.g, s.n, s.wd, s.neg_lr);
  } else if (s.decay) {
    if (s.first)
      momentum_nesterov<kFused, true, true>(s);
    else
      momentum_nesterov<kFused, true, false>(s);
  } else {
    if (s.first)
      momentum_nesterov<kFused, false, true>(s);
    else
      momentum_nesterov<kFused, false, false>(s);
  }
}

void sgd_unfused(const SgdStep& s) { sgd_dispatch<false>(s); }
FAST_OPTIM_FMA_TARGET void sgd_fused(const SgdStep& s) { sgd_dispatch<true>(s); }

// momentum_pass without decay nor nesterov, in two passes (Optimizer::take_gradient, apply_taken):
// the same operations on each element, so the same bits.
template <bool kFused>
[[gnu::always_inline]] inline void momentum_take(const SgdStep& s) {
  float* __restrict b = s.b;
  const float* __restrict g = s.g;
  if (s.first)
    for (std::size_t i = 0; i < s.n; ++i) b[i] = g[i];
  else
    for (std::size_t i = 0; i < s.n; ++i) b[i] = madd<kFused>(s.one_minus_dampening, g[i], b[i] * s.mu);
}

template <bool kFused>
[[gnu::always_inline]] inline void momentum_apply(const SgdStep& s) {
  float* __restrict p = s.p;
  const float* __restrict b = s.b;
  for (std::size_t i = 0; i < s.n; ++i) p[i] = madd<kFused>(s.neg_lr, b[i], p[i]);
}

void take_unfused(const SgdStep& s) { momentum_take<false>(s); }
FAST_OPTIM_FMA_TARGET void take_fused(const SgdStep& s) { momentum_take<true>(s); }
void apply_unfused(const SgdStep& s) { momentum_apply<false>(s); }
FAST_OPTIM_FMA_TARGET void apply_fused(const SgdStep& s) { momentum_apply<true>(s); }

}  // namespace

Sgd::Sgd(const OptimizerOptions& options, std::size_t numel)
    : numel_(numel),
      weight_decay_(options.weight_decay),
      momentum_(options.momentum),
      dampening_(options.dampening),
      fused_(detail::use_fused_multiply_add()) {
  const std::string rule = "optimizer = " + options.name;  // the setting that chose it, as a config line
  if (options.name == "sgd") {
    kind_ = Kind::plain;
  } else if (options.name == "momentum") {
    kind_ = Kind::momentum;
  } else if (options.name == "nesterov") {
    kind_ = Kind::nesterov;
  } else {
    FAST_THROW(InvalidArgument, "Sgd: OptimizerOptions.name: expected sgd, momentum or nesterov, got '{}'",
               options.name);
  }
  using detail::check_option;
  constexpr std::string_view kOwner = detail::kOptimizerOptions;
  check_option(std::isfinite(options.lr) && options.lr >= 0, kOwner, "lr", rule, "a finite value >= 0", options.lr);
  check_option(std::isfinite(options.weight_decay) && options.weight_decay >= 0, kOwner, "weight_decay", rule,
               "a finite value >= 0", options.weight_decay);
  if (kind_ != Kind::plain) {
    check_option(std::isfinite(options.momentum) && options.momentum > 0, kOwner, "momentum", rule,
                 "a finite value > 0 (without momentum: optimizer sgd)", options.momentum);
    check_option(options.dampening >= 0 && options.dampening <= 1, kOwner, "dampening", rule, "a value in [0, 1]",
                 options.dampening);
    if (kind_ == Kind::nesterov)
      check_option(options.dampening == 0, kOwner, "dampening", rule, "0 (nesterov requires zero dampening)",
                   options.dampening);
    buffer_ = core::Buffer::long_lived(numel, core::DType::f32);  // lives as long as the worker
  }
}

std::string_view Sgd::name() const {
  switch (kind_) {
    case Kind::plain: return "sgd";
    case Kind::momentum: return "momentum";
    case Kind::nesterov: return "nesterov";
  }
  return "?";
}

void Sgd::make_state_resident() noexcept {
  if (resident_) return;
  core::populate_pages(buffer_.data(), numel_ * sizeof(float));
  resident_ = true;
}

void Sgd::step(std::span<float> params, std::span<const float> grads, double lr) {
  detail::check_step(name(), params, grads, numel_, lr);
  if (taken_) FAST_THROW(InvalidUsage, "{} step: a gradient taken before was not applied yet", name());
  if (kind_ != Kind::plain) make_state_resident();
  const SgdStep s{
      .p = params.data(),
      .g = grads.data(),
      .b = kind_ == Kind::plain ? nullptr : static_cast<float*>(buffer_.data()),
      .n = numel_,
      .wd = static_cast<float>(weight_decay_),
      .mu = static_cast<float>(momentum_),
      .one_minus_dampening = static_cast<float>(1 - dampening_),
      .neg_lr = static_cast<float>(-1 * lr),
      .momentum = kind_ != Kind::plain,
      .decay = weight_decay_ != 0,
      .first = steps_ == 0,
      .nesterov = kind_ == Kind::nesterov,
  };
  if (s.n > 0) {
    if (fused_)
      sgd_fused(s);
    else
      sgd_unfused(s);
  }
  ++steps_;
}

}  // namespace fast::optim

namespace fast::optim {

std::vector<std::span<float>> Sgd::state() {
  if (kind_ == Kind::plain) return {};
  return {std::span<float>(static_cast<float*>(buffer_.data()), numel_)};
}

void Sgd::set_steps_taken(std::int64_t steps) {
  FAST_ENFORCE(steps >= 0, "{}: steps taken must be >= 0, got {}", name(), steps);
  steps_ = steps;
  taken_ = false;
}

void Sgd::take_gradient(std::span<const float> grads) {
  if (!takes_gradient_first()) Optimizer::take_gradient(grads);
  detail::check_split(name(), "take_gradient", "grads", grads, numel_, taken_, false);
  make_state_resident();
  const SgdStep s{.g = grads.data(),
                  .b = static_cast<float*>(buffer_.data()),
                  .n = numel_,
                  .mu = static_cast<float>(momentum_),
                  .one_minus_dampening = static_cast<float>(1 - dampening_),
                  .first = steps_ == 0};
  if (fused_)
    take_fused(s);
  else
    take_unfused(s);
  taken_ = true;
}

void Sgd::apply_taken(std::span<float> params, double lr) {
  if (!takes_gradient_first()) Optimizer::apply_taken(params, lr);
  detail::check_split(name(), "apply_taken", "params", params, numel_, taken_, true);
  detail::check_lr(name(), "apply_taken", lr);
  const SgdStep s{
      .p = params.data(), .b = static_cast<float*>(buffer_.data()), .n = numel_, .neg_lr = static_cast<float>(-1 * lr)};
  if (fused_)
    apply_fused(s);
  else
    apply_unfused(s);
  taken_ = false;
  ++steps_;
}

}  // namespace fast::optim
