#include "fast/strategy/local_sgd.hpp"
#include "builtin.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/saved_state.hpp"

namespace fast::strategy {

LocalSgdStrategy::LocalSgdStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {}

void LocalSgdStrategy::attach(ModelState state) {
  if (!compresses(options_)) return;
  reduce_ = std::make_unique<collective::CodecAllreduce>(
      comm_, collective::CodecAllreduceOptions{.codec = options_.compress,
                                               .seed = options_.seed,
                                               .layout = core::Layout(state.layout.begin(), state.layout.end()),
                                               .chunk_bytes = options_.chunk_bytes,
                                               .meter = &meter_,
                                               .sparse = parse_sparse_reduce(options_.sparse_allreduce)});
  anchor_.assign(state.params.begin(), state.params.end());
  delta_.resize(anchor_.size());
  // An elastic group averages the initial replicas in its first step instead, among the members it
  // has then (vacant ranks left out); a worker joining a run under way takes the anchor with the
  // members' state.
  if (!comm_.elastic()) average_initial_replicas(state.params);
}

void LocalSgdStrategy::average_initial_replicas(std::span<float> params) {
  std::copy(params.begin(), params.end(), anchor_.begin());
  comm_.allreduce(core::MutableView(std::span<float>(anchor_)), {.op = collective::ReduceOp::avg});
  std::copy(anchor_.begin(), anchor_.end(), params.begin());
}

bool LocalSgdStrategy::averages_initial_replicas(std::int64_t step) const {
  return reduce_ != nullptr && comm_.elastic() && step == 0;
}

void LocalSgdStrategy::forget_own_state(ModelState /*state*/) {
  // The residuals are another worker's, or hold part of a step that failed (as allreduce's).
  if (reduce_) reduce_->forget_residuals();
}

void LocalSgdStrategy::save_state(Checkpoint& out) {
  if (!reduce_) return;
  out.arrays.insert_or_assign("local_sgd.anchor", anchor_);
  reduce_->save("local_sgd.codec", out);
}

void LocalSgdStrategy::restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState /*state*/) {
  if (!reduce_) return;
  const std::vector<float>& anchor = checkpoint.array("local_sgd.anchor", anchor_.size(), source);
  reduce_->restore("local_sgd.codec", checkpoint, source);
  anchor_ = anchor;
}

StepOutcome LocalSgdStrategy::step(const StepInput& input) {
  runtime::Context& ctx = comm_.context();
  StepOutcome outcome;
  if (averages_initial_replicas(input.step)) {
    const double t0 = ctx.now();
    average_initial_replicas(input.state.params);
    outcome.comm_seconds += ctx.now() - t0;
  }
  const bool warmup = input.step < options_.sync_warmup;
  if (warmup) {
    const double t0 = ctx.now();
    if (reduce_)
      reduce_->average(core::MutableView(input.state.grads), 0);
    else
      comm_.allreduce(core::MutableView(input.state.grads),
                      {.op = collective::ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
    outcome.comm_seconds += ctx.now() - t0;
  }
  // A non-finite gradient is this worker's own (or, in warm-up, everyone's): its update is skipped,
  // the averaging below still happens, so replicas never wait on each other's decision.
  outcome.applied = apply_update(input, options_.non_finite, /*averaged=*/warmup);
  if (!warmup && (input.step + 1) % options_.period == 0) {
    const double t0 = ctx.now();
    if (reduce_) {
      std::span<float> x = input.state.params;
      for (std::size_t i = 0; i < x.size(); ++i) delta_[i] = x[i] - anchor_[i];
      reduce_->average(core::MutableView(std::span<float>(delta_)), 1);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = anchor_[i] += delta_[i];
    } else {
      comm_.allreduce(core::MutableView(input.state.params),
                      {.op = collective::ReduceOp::avg, .chunk_bytes = options_.chunk_bytes});
    }
    outcome.comm_seconds += ctx.now() - t0;
  }
  return outcome;
}

namespace {

// What a run of `total` steps per worker misses (StrategyOption::short_run): the first average of
// the models comes at the first step s >= sync_warmup with (s + 1) % period == 0 (step() above).
std::optional<std::string> period_past_run(const StrategyOptions& o, std::int64_t total) {
  if (o.sync_warmup >= total) return std::nullopt;  // sync_warmup's own warning says it all
  const std::int64_t first = (o.sync_warmup / o.period + 1) * o.period - 1;
  if (first < total) return std::nullopt;
  return fmt::format(
      "the first average of the models would come at step {}, after the run's {} steps per worker: "
      "the replicas train apart for the whole run",
      first + 1, total);
}

std::optional<std::string> warmup_past_run(const StrategyOptions& o, std::int64_t total) {
  if (o.sync_warmup < total) return std::nullopt;
  return fmt::format("covers the run's {} steps per worker: every step averages gradients, as allreduce", total);
}

}  // namespace

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::local_sgd_registration() {
  return {.name = "local-sgd",
          .summary = "periodic model averaging",
          .make = factory_of<LocalSgdStrategy>(),
          .options = {StrategyOption::field("period", &StrategyOptions::period,
                                            "average the replicas every this many steps.")
                          .at_least(1)
                          .short_run(&period_past_run),
                      StrategyOption::field("sync_warmup", &StrategyOptions::sync_warmup,
                                            "the first this many steps average gradients (as allreduce).")
                          .at_least(0)
                          .short_run(&warmup_past_run),
                      sparse_allreduce_option()},
          .elastic = [](const StrategyOptions&) -> std::string { return {}; }};
}

}  // namespace fast::strategy
