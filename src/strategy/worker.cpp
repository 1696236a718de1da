#include "fast/strategy/worker.hpp"

#include "fast/core/error.hpp"

namespace fast::strategy {

namespace {
ModelState checked(ModelState state) {
  FAST_ENFORCE_EQ(state.params.size(), state.grads.size(), "Worker: parameters and gradients must have one length");
  return state;
}
}  // namespace

Worker::Worker(runtime::Context& ctx, const WorkerOptions& options, ModelState state)
    : comm_(ctx),
      state_(checked(state)),
      optimizer_(optim::make_optimizer(options.optimizer, state.params.size())),
      schedule_(options.optimizer.lr, options.schedule),
      strategy_(make_strategy(options.strategy, comm_)) {}

StepReport Worker::step() {
  const double lr = schedule_.lr_at(steps_);
  const StepOutcome outcome = strategy_->step({.state = state_, .optimizer = *optimizer_, .lr = lr, .step = steps_});
  StepReport report{.step = steps_, .lr = lr, .applied = outcome.applied, .comm_seconds = outcome.comm_seconds};
  ++steps_;
  if (!outcome.applied) ++skipped_;
  comm_seconds_ += outcome.comm_seconds;
  return report;
}

void Worker::representative(std::span<float> out) { strategy_->representative(state_, out); }

}  // namespace fast::strategy
