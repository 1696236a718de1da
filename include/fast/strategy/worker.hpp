#pragma once
// Worker: the object a training loop talks to after its framework's backward pass. It owns this
// worker's Communicator, Strategy, Optimizer and learning-rate schedule, and applies them to the
// replica's flat parameters and gradients:
//
//   for each mini-batch: zero grads; forward; backward (framework) ; worker.step();
//   worker.representative(out);    // collective: the model to evaluate or save
//
// One Worker per worker; not thread-safe (call from the worker's main activity).

#include <cstdint>
#include <memory>
#include <span>

#include "fast/collective/communicator.hpp"
#include "fast/optim/optimizer.hpp"
#include "fast/optim/schedule.hpp"
#include "fast/runtime/context.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

struct WorkerOptions {
  StrategyOptions strategy;
  optim::OptimizerOptions optimizer;
  optim::ScheduleOptions schedule;
};

struct StepReport {
  std::int64_t step = 0;      // index of the step just taken (0-based)
  double lr = 0;              // learning rate used
  bool applied = true;        // false when the strategy skipped the update
  double comm_seconds = 0;    // communication and waiting time of this step, runtime clock
};

class Worker {
 public:
  // state must stay valid for the Worker's lifetime. Throws InvalidArgument for bad options or
  // params/grads of different lengths.
  Worker(runtime::Context& ctx, const WorkerOptions& options, ModelState state);

  // One training step on the gradient the framework just wrote into state.grads.
  StepReport step();
  // Collective: writes the representative model (per the strategy) into out.
  void representative(std::span<float> out);

  std::int64_t steps() const noexcept { return steps_; }
  std::int64_t skipped_steps() const noexcept { return skipped_; }
  double comm_seconds() const noexcept { return comm_seconds_; }
  const Strategy& strategy() const noexcept { return *strategy_; }
  collective::Communicator& communicator() noexcept { return comm_; }
  runtime::Context& context() noexcept { return comm_.context(); }

 private:
  collective::Communicator comm_;
  ModelState state_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  optim::LrSchedule schedule_;
  std::unique_ptr<Strategy> strategy_;
  std::int64_t steps_ = 0;
  std::int64_t skipped_ = 0;
  double comm_seconds_ = 0;
};

}  // namespace fast::strategy
