#pragma once
// Slowdown: emulated heterogeneity for real-clock runtimes. After each compute phase a worker
// waits (f - 1) times the compute time it just measured, through its Context, so it behaves as if
// its processor were f times slower:
//   f = factors[rank]                      (a fixed per-worker factor, `--slowdown 1,1,1,4`)
//     x straggler_factor with probability straggler_probability, drawn each step
//                                          (random stragglers, seeded per worker: reproducible)
// Under `sim` the cluster description plays this role instead. Not thread-safe: one per worker.

#include <cstdint>
#include <random>
#include <vector>

#include "fast/runtime/context.hpp"

namespace fast::runtime {

struct SlowdownOptions {
  std::vector<double> factors;         // empty: 1 for every worker; else one factor >= 1 per worker
  double straggler_probability = 0.0;  // in [0, 1]
  double straggler_factor = 1.0;       // >= 1
  std::uint64_t seed = 0;              // with the rank, seeds the straggler draws
};

class Slowdown {
 public:
  // InvalidArgument for a factor < 1, a factor count different from `workers`, a probability
  // outside [0, 1] or a straggler factor < 1, naming the option and the value got.
  Slowdown(const SlowdownOptions& options, int rank, int workers);

  // True when this worker can ever be slowed down.
  bool active() const noexcept { return base_ > 1.0 || (probability_ > 0.0 && straggler_ > 1.0); }
  // Call after a compute phase of `compute_seconds`: draws this step's factor, waits
  // (factor - 1) * compute_seconds through ctx.sleep, and returns the seconds waited.
  double after_compute(Context& ctx, double compute_seconds);

  double waited_seconds() const noexcept { return waited_; }    // total so far
  std::int64_t straggled_steps() const noexcept { return straggled_; }  // steps with a straggler draw

 private:
  double base_ = 1.0;
  double probability_ = 0.0;
  double straggler_ = 1.0;
  std::mt19937_64 rng_;
  double waited_ = 0.0;
  std::int64_t straggled_ = 0;
};

}  // namespace fast::runtime
