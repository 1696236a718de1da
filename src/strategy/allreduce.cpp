#include "fast/strategy/allreduce.hpp"
#include "builtin.hpp"

#include <algorithm>

#include "fast/core/error.hpp"
#include "fast/core/finite.hpp"
#include "fast/core/saved_state.hpp"
#include "fast/strategy/optimizer_state.hpp"

namespace fast::strategy {

AllreduceStrategy::AllreduceStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options), aggregate_(Aggregate::parse(options.aggregate, comm.size())) {}

// A robust rule, computed by slices: the coordinates are cut into W slices of L = ceil(n / W)
// (the last ones zero-padded); an all-to-all gives worker k slice k of every gradient, worker k
// applies the rule to it, and an all-gather of the W results gives every worker the whole
// aggregate. Each coordinate is computed once, from the W values in rank order, so every replica
// ends with the same bits; the bytes are the ring's, 2 (W-1) L per worker. krum and multi-krum
// compare whole gradients: the squared distances over each slice are summed by an all-reduce of
// W x W doubles, every worker makes the same choice, and contributes its slice of the chosen
// gradient (multi-krum: the mean of the chosen ones' slices).
void AllreduceStrategy::robust_aggregate(std::span<float> grads) {
  const int w = comm_.size();
  const std::size_t n = grads.size(), len = (n + static_cast<std::size_t>(w) - 1) / static_cast<std::size_t>(w);
  padded_.assign(len * static_cast<std::size_t>(w), 0.0f);
  std::copy(grads.begin(), grads.end(), padded_.begin());
  gathered_.resize(padded_.size());
  comm_.alltoall(core::ConstView(std::span<const float>(padded_)), core::MutableView(std::span<float>(gathered_)));
  std::span<float> result = std::span<float>(padded_).first(len);  // padded_ is free again: reuse it
  if (aggregate_.by_krum_score()) {
    distances_.resize(static_cast<std::size_t>(w) * static_cast<std::size_t>(w));
    krum_distances(gathered_, w, distances_);
    comm_.allreduce(core::MutableView(std::span<double>(distances_)));
    const std::vector<int> chosen = krum_selection(distances_, w, aggregate_.tolerated(), aggregate_.selected());
    average_rows(gathered_, chosen, result);  // krum: the one chosen gradient's slice, as it is
  } else {
    aggregate_.apply(gathered_, w, result);
  }
  comm_.allgather(core::ConstView(std::span<const float>(result)), core::MutableView(std::span<float>(gathered_)));
  std::copy_n(gathered_.begin(), n, grads.begin());
  comm_.context().memory_traffic(static_cast<double>(gathered_.size()) * sizeof(float) * 6.0);
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
  if (dgc_ && dgc_->options().local_view) dgc_->view(state.params, {});  // keeps x0; the view starts as x0
  if (dgc_) dgc_update_ = optim::make_optimizer(dgc_update_optimizer(options_.optimizer), state.params.size());
}

void AllreduceStrategy::forget_own_state(ModelState state) {
  // The residuals and DGC's velocity are another worker's, or hold part of a step that failed
  // (encoded, accumulated, never applied): this worker starts its own afresh. With the local view
  // it then looks at the shared x itself (its own residual is zero).
  if (reduce_) reduce_->forget_residuals();
  if (!dgc_) return;
  dgc_->forget_velocity();
  if (dgc_->options().local_view) dgc_->look(state.params, {});
}

void AllreduceStrategy::regrouped(ModelState /*state*/) {
  if (dgc_) dgc_->set_workers(comm_.group_size());  // the clipping bound C / sqrt(workers)
}

void AllreduceStrategy::save_state(Checkpoint& out) {
  if (reduce_) reduce_->save("allreduce.codec", out);
  if (dgc_) {
    dgc_->save("allreduce.dgc", out);
    save_optimizer("allreduce.dgc.update", *dgc_update_, out);
  }
}

void AllreduceStrategy::restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) {
  if (dgc_) {
    SavedOptimizer update("allreduce.dgc.update", checkpoint, source, *dgc_update_);
    dgc_->restore("allreduce.dgc", checkpoint, source, state.params);
    update.apply();
  }
  if (reduce_) reduce_->restore("allreduce.codec", checkpoint, source);
  // The view is computed again from x and v, as the step that saved them did (the parameters were
  // saved as the view between two steps, as x after finish()).
  if (dgc_ && dgc_->options().local_view) dgc_->look(state.params, reduce_->feedback()->residual(0));
}

StepOutcome AllreduceStrategy::step(const StepInput& input) {
  runtime::Context& ctx = comm_.context();
  const double t0 = ctx.now();
  if (dgc_) return dgc_step(input, t0);
  // Through a codec a non-finite gradient cannot go (int8's and sign's scales, top-k's selection,
  // threshold's comparison are undefined on NaN): as under DGC, this worker contributes nothing
  // new (zeros; its error-feedback residual still goes out), and reports it after the step.
  bool finite = true;
  if (!aggregate_.is_mean()) {
    robust_aggregate(input.state.grads);
  } else if (reduce_) {
    finite = core::all_finite(input.state.grads);
    if (!finite) std::fill(input.state.grads.begin(), input.state.grads.end(), 0.0f);
    reduce_->average(core::MutableView(input.state.grads), 0);
  } else {
    comm_.allreduce(core::MutableView(input.state.grads),
                    {.op = collective::ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
  }
  StepOutcome outcome{.comm_seconds = ctx.now() - t0};
  // Every worker holds the same averaged gradient, so all take the same decision.
  outcome.applied = apply_update(input, options_.non_finite, /*averaged=*/true);
  if (!finite && outcome.applied)
    report_non_finite(input, options_.non_finite, "contributed nothing new (compress) at step");
  return outcome;
}

// Every worker takes part whatever its gradient: a non-finite local gradient adds nothing new (its
// residual is still sent), and the policy is applied to that worker after the collective.
StepOutcome AllreduceStrategy::dgc_step(const StepInput& input, double t0) {
  runtime::Context& ctx = comm_.context();
  // grads become this step's update at its learning rate (Dgc applies it), so the sparse average
  // is applied at rate 1.
  const bool finite = dgc_->accumulate(input.state.grads, input.state.params, input.lr);
  compress::ErrorFeedback& feedback = *reduce_->feedback();
  feedback.codec().set_keep_ratio(dgc_->density(input.step));
  reduce_->average(core::MutableView(input.state.grads), 0);
  dgc_sent(*dgc_, feedback, 0);
  StepOutcome outcome{.comm_seconds = ctx.now() - t0};
  // With the local view the update goes to the kept shared parameters x, then the worker looks at x - v.
  const bool local_view = dgc_->options().local_view;
  const ModelState updated =
      local_view ? ModelState{.params = dgc_->shared(), .grads = input.state.grads, .layout = input.state.layout}
                 : input.state;
  outcome.applied =
      apply_update({.state = updated, .optimizer = *dgc_update_, .lr = 1.0, .step = input.step}, options_.non_finite,
                   /*averaged=*/true);
  if (local_view) dgc_->look(input.state.params, feedback.residual(0));
  if (!finite && outcome.applied)
    report_non_finite(input, options_.non_finite, "contributed nothing new (dgc) at step");
  return outcome;
}

bool AllreduceStrategy::replicas_identical() const { return finished_ || !(dgc_ && dgc_->options().local_view); }

void AllreduceStrategy::finish(ModelState state) {
  if (finished_) return;
  finished_ = true;
  if (dgc_ && dgc_->options().local_view) dgc_->look(state.params, {});
}

std::span<const float> AllreduceStrategy::representative_in_place(ModelState state) const {
  return dgc_model(dgc_.get(), state.params);
}

void AllreduceStrategy::representative(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "representative: output length must equal the parameter count");
  const std::span<const float> model = dgc_model(dgc_.get(), state.params);
  std::copy(model.begin(), model.end(), out.begin());
}

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::allreduce_registration() {
  std::vector<StrategyOption> options{sparse_allreduce_option()};
  for (StrategyOption& o : dgc_options()) options.push_back(std::move(o));
  return {.name = "allreduce",
          .summary = "synchronous gradient averaging",
          .make = factory_of<AllreduceStrategy>(),
          .options = std::move(options),
          .elastic = &builtin::elastic_with_mean,
          .sends_gradients = true,
          .robust_aggregate = true,
          .external_optimizer = true};
}

}  // namespace fast::strategy
