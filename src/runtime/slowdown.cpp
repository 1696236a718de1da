#include "fast/runtime/slowdown.hpp"

#include "fast/core/error.hpp"

namespace fast::runtime {

Slowdown::Slowdown(const SlowdownOptions& options, int rank, int workers)
    : probability_(options.straggler_probability),
      straggler_(options.straggler_factor),
      rng_(core::derive_seed(options.seed, kSlowdownSalt, static_cast<std::uint64_t>(rank))) {
  if (!options.factors.empty()) {
    FAST_ENFORCE(static_cast<int>(options.factors.size()) == workers,
                 "slowdown: expected one factor per worker ({}), got {}", workers, options.factors.size());
    for (std::size_t i = 0; i < options.factors.size(); ++i)
      FAST_ENFORCE(options.factors[i] >= 1.0, "slowdown: factor of worker {} must be >= 1, got {}", i,
                   options.factors[i]);
    base_ = options.factors[static_cast<std::size_t>(rank)];
  }
  FAST_ENFORCE(probability_ >= 0.0 && probability_ <= 1.0, "straggler_probability: expected a value in [0, 1], got {}",
               probability_);
  FAST_ENFORCE(straggler_ >= 1.0, "straggler_factor: expected a value >= 1, got {}", straggler_);
}

double Slowdown::after_compute(Context& ctx, double compute_seconds) {
  double factor = base_;
  if (probability_ > 0.0 && core::bernoulli(rng_, probability_)) {
    factor *= straggler_;
    ++straggled_;
  }
  const double wait = (factor - 1.0) * compute_seconds;
  if (wait > 0.0) {
    ctx.sleep(wait);
    waited_ += wait;
  }
  return wait;
}

}  // namespace fast::runtime
