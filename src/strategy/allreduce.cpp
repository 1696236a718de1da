#include "fast/strategy/allreduce.hpp"

#include <algorithm>

#include "fast/core/error.hpp"
#include "fast/core/finite.hpp"
#include "fast/core/log.hpp"

namespace fast::strategy {

AllreduceStrategy::AllreduceStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {}

StepOutcome AllreduceStrategy::step(const StepInput& input) {
  runtime::Context& ctx = comm_.context();
  const double t0 = ctx.now();
  comm_.allreduce(core::MutableView(input.state.grads),
                  {.op = collective::ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
  StepOutcome outcome{.applied = true, .comm_seconds = ctx.now() - t0};
  // Every worker holds the same averaged gradient, so all take the same decision.
  if (!core::all_finite(input.state.grads)) {
    if (options_.non_finite == NonFinitePolicy::error)
      FAST_THROW(core::InvalidArgument, "allreduce: the averaged gradient of step {} holds NaN or infinity",
                 input.step);
    if (ctx.rank() == 0)
      core::log(core::LogLevel::warn, "allreduce: step {} skipped: the averaged gradient holds NaN or infinity",
                input.step);
    outcome.applied = false;
    return outcome;
  }
  input.optimizer.step(input.state.params, input.state.grads, input.lr);
  return outcome;
}

void AllreduceStrategy::representative(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "representative: output length must equal the parameter count");
  std::copy(state.params.begin(), state.params.end(), out.begin());
}

}  // namespace fast::strategy
