#include "fast/strategy/allreduce.hpp"

#include <algorithm>

#include "fast/core/error.hpp"

namespace fast::strategy {

void AllreduceStrategy::check_options(const StrategyOptions& options, int workers) {
  const Aggregate aggregate = Aggregate::parse(options.aggregate, workers);
  FAST_ENFORCE(aggregate.is_mean() || (!compresses(options) && !options.dgc),
               "aggregate '{}': the robust rules combine every worker's whole gradient; they do not go with "
               "compress = '{}'{} (use aggregate = mean)",
               options.aggregate, options.compress, options.dgc ? " and dgc" : "");
}

AllreduceStrategy::AllreduceStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options), aggregate_(Aggregate::parse(options.aggregate, comm.size())) {
  check_options(options, comm.size());
}

// Every worker gathers the same W gradients (in rank order) and computes the same aggregate.
void AllreduceStrategy::robust_aggregate(std::span<float> grads) {
  const int w = comm_.size();
  gathered_.resize(grads.size() * static_cast<std::size_t>(w));
  comm_.allgather(core::ConstView(std::span<const float>(grads)), core::MutableView(std::span<float>(gathered_)));
  aggregate_.apply(gathered_, w, grads);
  comm_.context().memory_traffic(static_cast<double>(gathered_.size()) * sizeof(float) * 2.0);
}

void AllreduceStrategy::attach(ModelState state) {
  if (compresses(options_))
    reduce_ = std::make_unique<collective::CodecAllreduce>(
        comm_, collective::CodecAllreduceOptions{.codec = options_.compress,
                                                 .seed = options_.seed,
                                                 .layout = core::Layout(state.layout.begin(), state.layout.end()),
                                                 .chunk_bytes = options_.chunk_bytes,
                                                 .meter = &meter_,
                                                 .sparse = parse_sparse_reduce(options_.sparse_allreduce)});
  dgc_ = make_dgc(options_, state.params.size());
  if (dgc_) dgc_update_ = optim::make_optimizer(dgc_update_optimizer(options_.optimizer), state.params.size());
}

StepOutcome AllreduceStrategy::step(const StepInput& input) {
  runtime::Context& ctx = comm_.context();
  const double t0 = ctx.now();
  if (dgc_) return dgc_step(input, t0);
  if (!aggregate_.is_mean())
    robust_aggregate(input.state.grads);
  else if (reduce_)
    reduce_->average(core::MutableView(input.state.grads), 0);
  else
    comm_.allreduce(core::MutableView(input.state.grads),
                    {.op = collective::ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
  StepOutcome outcome{.comm_seconds = ctx.now() - t0};
  // Every worker holds the same averaged gradient, so all take the same decision.
  outcome.applied = apply_update(input, options_.non_finite);
  return outcome;
}

// Every worker takes part whatever its gradient: a non-finite local gradient adds nothing new (its
// residual is still sent), and the policy is applied to that worker after the collective.
StepOutcome AllreduceStrategy::dgc_step(const StepInput& input, double t0) {
  runtime::Context& ctx = comm_.context();
  const bool finite = dgc_->accumulate(input.state.grads, input.state.params);
  compress::ErrorFeedback& feedback = *reduce_->feedback();
  feedback.codec().set_keep_ratio(dgc_->density(input.step));
  reduce_->average(core::MutableView(input.state.grads), 0);
  dgc_sent(*dgc_, feedback, 0);
  StepOutcome outcome{.comm_seconds = ctx.now() - t0};
  outcome.applied = apply_update({.state = input.state, .optimizer = *dgc_update_, .lr = input.lr, .step = input.step},
                                 options_.non_finite);
  if (!finite && outcome.applied) report_non_finite(input, options_.non_finite, "contributed nothing new (dgc) at step");
  return outcome;
}

void AllreduceStrategy::representative(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "representative: output length must equal the parameter count");
  std::copy(state.params.begin(), state.params.end(), out.begin());
}

}  // namespace fast::strategy
