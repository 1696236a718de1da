#include "fast/strategy/allreduce.hpp"

#include <algorithm>

#include "fast/core/error.hpp"

namespace fast::strategy {

AllreduceStrategy::AllreduceStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {}

StepOutcome AllreduceStrategy::step(const StepInput& input) {
  runtime::Context& ctx = comm_.context();
  const double t0 = ctx.now();
  comm_.allreduce(core::MutableView(input.state.grads),
                  {.op = collective::ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
  StepOutcome outcome{.comm_seconds = ctx.now() - t0};
  // Every worker holds the same averaged gradient, so all take the same decision.
  outcome.applied = apply_update(input, options_.non_finite);
  return outcome;
}

void AllreduceStrategy::representative(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "representative: output length must equal the parameter count");
  std::copy(state.params.begin(), state.params.end(), out.begin());
}

}  // namespace fast::strategy
