#include "fast/metrics/divergence.hpp"

#include <cmath>

#include <fmt/format.h>

#include "fast/core/error.hpp"

namespace fast::metrics {

namespace {
// A loss as text: "nan" whatever its sign bit (fmt writes "-nan"), "inf", "-inf" or the number.
std::string loss_text(double value) { return std::isnan(value) ? "nan" : fmt::format("{}", value); }
}  // namespace

std::string DivergenceSign::describe() const {
  switch (kind) {
    case Kind::none: return "";
    case Kind::train_loss: return fmt::format("worker {}: training loss {} at step {}", worker, loss_text(value), step);
    case Kind::eval_not_finite:
      return fmt::format("worker {}: evaluation at step {} gave test loss {}", worker, step, loss_text(value));
    case Kind::chance_with_growing_norm:
      return fmt::format("worker {}: test accuracy {:.4f} (chance) at step {} while the parameter norm grew to {:.4g}",
                         worker, accuracy, step, value);
  }
  return "";
}

DivergenceCheck::DivergenceCheck(int worker, double initial_norm, int classes, DivergenceRule rule)
    : worker_(worker),
      initial_norm_(initial_norm),
      chance_accuracy_(1.0 / classes),
      rule_(rule),
      last_norm_(initial_norm) {
  FAST_ENFORCE(classes >= 2, "DivergenceCheck: expected at least 2 classes, got {}", classes);
  FAST_ENFORCE(std::isfinite(initial_norm) && initial_norm >= 0,
               "DivergenceCheck: the initial parameter norm must be finite and >= 0, got {}", initial_norm);
}

std::optional<DivergenceSign> DivergenceCheck::latch(DivergenceSign sign) {
  if (diverged()) return std::nullopt;
  sign.worker = worker_;
  sign_ = sign;
  return sign_;
}

std::optional<DivergenceSign> DivergenceCheck::on_train_loss(std::int64_t step, double loss) {
  if (std::isfinite(loss)) return std::nullopt;
  return latch({.kind = DivergenceSign::Kind::train_loss, .step = step, .value = loss});
}

std::optional<DivergenceSign> DivergenceCheck::on_evaluation(std::int64_t step, double accuracy, double loss,
                                                             double param_norm) {
  if (!std::isfinite(loss) || !std::isfinite(param_norm))
    return latch({.kind = DivergenceSign::Kind::eval_not_finite,
                  .step = step,
                  .value = std::isfinite(loss) ? param_norm : loss});
  const bool at_chance = accuracy <= rule_.chance_factor * chance_accuracy_;
  const bool grown = param_norm >= rule_.norm_growth * initial_norm_ && param_norm > last_norm_;
  last_norm_ = param_norm;
  if (!at_chance || !grown) return std::nullopt;
  return latch({.kind = DivergenceSign::Kind::chance_with_growing_norm,
                .step = step,
                .value = param_norm,
                .accuracy = accuracy});
}

}  // namespace fast::metrics
