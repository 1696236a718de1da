#include "fast/strategy/allreduce.hpp"

#include <algorithm>

#include "fast/core/error.hpp"

namespace fast::strategy {

AllreduceStrategy::AllreduceStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {}

void AllreduceStrategy::attach(ModelState state) {
  if (compresses(options_))
    reduce_ = std::make_unique<collective::CodecAllreduce>(
        comm_, collective::CodecAllreduceOptions{.codec = options_.compress,
                                                 .seed = options_.seed,
                                                 .layout = core::Layout(state.layout.begin(), state.layout.end()),
                                                 .chunk_bytes = options_.chunk_bytes,
                                                 .meter = &meter_});
}

StepOutcome AllreduceStrategy::step(const StepInput& input) {
  runtime::Context& ctx = comm_.context();
  const double t0 = ctx.now();
  if (reduce_)
    reduce_->average(core::MutableView(input.state.grads), 0);
  else
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
