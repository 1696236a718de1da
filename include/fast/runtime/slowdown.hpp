#pragma once
// Slowdown: emulated heterogeneity for real-clock runtimes. After each compute phase a worker
// waits (f - 1) times the compute time it just measured, through its Context, so it behaves as if
// its processor were f times slower:
//   f = factors[rank]                      (a fixed per-worker factor, `--slowdown 1,1,1,4`)
//     x straggler_factor with probability straggler_probability, drawn each step
//                                          (random stragglers, seeded per worker: reproducible)
// The straggler draw of a worker's k-th after_compute with p = straggler_probability > 0 is
//   u_k = core::uniform01(k-th output of core::SplitMix64(core::derive_seed(seed, kSlowdownSalt, rank)))
//   straggles when u_k < p
// (fast/core/random.hpp): a Bernoulli(p) draw per step, independent across steps and workers, the
// same on every platform and standard library (the std::uniform_real_distribution FAST drew with
// before gives different values under different standard libraries). With p = 0 nothing is drawn.
// Under `sim` the cluster description plays this role instead. Not thread-safe: one per worker.

#include <cstdint>
#include <vector>

#include "fast/core/random.hpp"
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
  // "slowdown" in ASCII: the salt of the straggler draws' seeds.
  static constexpr std::uint64_t kSlowdownSalt = 0x736c6f77646f776eULL;

  // InvalidArgument for a factor < 1, a factor count different from `workers`, a probability
  // outside [0, 1] or a straggler factor < 1, naming the option and the value got.
  Slowdown(const SlowdownOptions& options, int rank, int workers);

  // True when this worker can ever be slowed down.
  bool active() const noexcept { return base_ > 1.0 || (probability_ > 0.0 && straggler_ > 1.0); }
  // Call after a compute phase of `compute_seconds`: draws this step's factor, waits
  // (factor - 1) * compute_seconds through ctx.sleep, and returns the seconds waited.
  double after_compute(Context& ctx, double compute_seconds);

  double waited_seconds() const noexcept { return waited_; }            // total so far
  std::int64_t straggled_steps() const noexcept { return straggled_; }  // steps with a straggler draw

 private:
  double base_ = 1.0;
  double probability_ = 0.0;
  double straggler_ = 1.0;
  core::SplitMix64 rng_;
  double waited_ = 0.0;
  std::int64_t straggled_ = 0;
};

}  // namespace fast::runtime
