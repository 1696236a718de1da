#pragma once
// Divergence: the signs that a training run has blown up, checked while it runs (docs/metrics.md
// "Divergence"). One DivergenceCheck per worker, fed with that worker's training losses and the
// evaluations it makes; it latches the FIRST sign it sees and reports it once.
//
// A run has diverged when
//   - a training loss (a worker's mini-batch cross-entropy) is NaN or infinite, or
//   - an evaluation's test loss or parameter norm is NaN or infinite, or
//   - an evaluation's test accuracy is at chance (<= chance_factor x 1 / classes) while the
//     representative model's L2 norm has grown to at least norm_growth x the initial model's norm
//     and is larger than at the previous evaluation of this worker.
// The last rule needs both: a run that is merely slow is at chance with a norm near the initial
// one, and a healthy run whose norm grows is well above chance.
//
// Torch-free and not thread-safe: each worker's loop owns its own.

#include <cstdint>
#include <optional>
#include <string>

namespace fast::metrics {

struct DivergenceSign {
  enum class Kind : std::int64_t { none = 0, train_loss = 1, eval_not_finite = 2, chance_with_growing_norm = 3 };
  Kind kind = Kind::none;
  int worker = 0;
  std::int64_t step = 0;  // the worker's step (train loss) or the evaluation's step
  double value = 0;       // the loss (train_loss), the test loss (eval_not_finite), the norm (chance)
  double accuracy = 0;    // chance_with_growing_norm: the test accuracy

  // One line for the terminal and the summary, e.g. "worker 2: training loss nan at step 37".
  std::string describe() const;
};

struct DivergenceRule {
  double chance_factor = 1.5;  // accuracy <= chance_factor / classes counts as chance
  double norm_growth = 2.0;    // ... with a norm >= norm_growth x the initial norm
};

class DivergenceCheck {
 public:
  // initial_norm: L2 norm of the initial model (> 0); classes: of the dataset (>= 2).
  DivergenceCheck(int worker, double initial_norm, int classes, DivergenceRule rule = {});

  // Returns the sign the first time one is seen, nullopt otherwise (and ever after).
  std::optional<DivergenceSign> on_train_loss(std::int64_t step, double loss);
  std::optional<DivergenceSign> on_evaluation(std::int64_t step, double accuracy, double loss, double param_norm);

  // The latched sign (kind none while the run looks healthy).
  const DivergenceSign& sign() const noexcept { return sign_; }
  bool diverged() const noexcept { return sign_.kind != DivergenceSign::Kind::none; }

 private:
  std::optional<DivergenceSign> latch(DivergenceSign sign);

  int worker_;
  double initial_norm_;
  double chance_accuracy_;
  DivergenceRule rule_;
  double last_norm_;
  DivergenceSign sign_;
};

}  // namespace fast::metrics
