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

// A robust rule, computed by slices: the coordinates are cut into W slices of L = ceil(n / W);
// worker k receives slice k of every gradient (an all-to-all of (W-1) L floats per worker),
// applies the rule to it, and an all-gather of the W results gives every worker the whole
// aggregate. Each coordinate is computed once, by one worker, from the W values in rank order, so
// every replica ends with the same bits; the bytes are those of the ring, 2 (W-1) L per worker.
// Tags: make_tag(strategy, kRobustSequence, step mod 2^24), one message per ordered pair and step.
// krum compares whole gradients: each worker computes the squared distances over its slice, an
// all-reduce sums them (W x W doubles), every worker makes the same choice, and its slice of the
// chosen gradient goes into the all-gather.
void AllreduceStrategy::robust_aggregate(std::span<float> grads, std::int64_t step) {
  constexpr std::uint32_t kRobustSequence = 0x41520000;  // "AR"
  runtime::Context& ctx = comm_.context();
  const int w = comm_.size(), me = comm_.rank();
  const std::size_t n = grads.size(), len = (n + static_cast<std::size_t>(w) - 1) / static_cast<std::size_t>(w);
  const auto slice = [&](int k) {
    const std::size_t begin = std::min(n, static_cast<std::size_t>(k) * len);
    return std::pair(begin, std::min(n, begin + len) - begin);
  };
  const runtime::Tag tag = runtime::make_tag(runtime::TagKind::strategy, kRobustSequence,
                                             static_cast<std::uint32_t>(step & 0xFFFFFF));
  const auto [mine, mine_len] = slice(me);
  gathered_.assign(len * static_cast<std::size_t>(w), 0.0f);  // W rows of my slice, zero-padded
  std::vector<core::Work> works;
  for (int p = 0; p < w; ++p) {
    if (p == me) continue;
    works.push_back(ctx.recv(p, tag, core::MutableView(std::span<float>(gathered_).subspan(p * len, mine_len))));
  }
  for (int p = 0; p < w; ++p) {
    if (p == me) continue;
    const auto [begin, count] = slice(p);
    works.push_back(ctx.send(p, tag, core::ConstView(std::span<const float>(grads).subspan(begin, count))));
  }
  std::copy_n(grads.begin() + static_cast<std::ptrdiff_t>(mine), mine_len, gathered_.begin() + me * len);
  for (core::Work& work : works) work.wait();
  std::vector<float> result(len, 0.0f);
  if (aggregate_.rule() == AggregateRule::krum) {
    std::vector<double> distances(static_cast<std::size_t>(w) * static_cast<std::size_t>(w));
    krum_distances(gathered_, w, distances);
    comm_.allreduce(core::MutableView(std::span<double>(distances)));
    const int best = krum_choice(distances, w, aggregate_.tolerated());
    std::copy_n(gathered_.begin() + best * len, len, result.begin());
  } else {
    aggregate_.apply(gathered_, w, result);
  }
  all_results_.resize(len * static_cast<std::size_t>(w));
  comm_.allgather(core::ConstView(std::span<const float>(result)), core::MutableView(std::span<float>(all_results_)));
  for (int k = 0; k < w; ++k) {
    const auto [begin, count] = slice(k);
    std::copy_n(all_results_.begin() + k * len, count, grads.begin() + static_cast<std::ptrdiff_t>(begin));
  }
  ctx.memory_traffic(static_cast<double>(gathered_.size() + 2 * n) * sizeof(float) * 2.0);
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
    robust_aggregate(input.state.grads, input.step);
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
