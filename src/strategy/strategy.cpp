#include "fast/strategy/strategy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "builtin.hpp"
#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"
#include "fast/core/finite.hpp"
#include "fast/core/log.hpp"
#include "fast/strategy/aggregate.hpp"

namespace fast::strategy {

namespace {
// Why `options`' strategy lacks `trait`, for an error: the strategies that have it ("allreduce and
// ps with mode = sync") and this one with its condition ("strategy 'ps' with mode = async");
// nothing when it has the trait.
struct TraitRefusal {
  std::string holders, who;
};
std::optional<TraitRefusal> lacks(const StrategyOptions& options, StrategyTrait StrategyRegistration::*trait) {
  const StrategyRegistration strategy = find_registration(options.name);
  if ((strategy.*trait).holds(options)) return std::nullopt;
  const std::string condition = (strategy.*trait).condition_for(options);
  return TraitRefusal{strategies_with(trait),
                      fmt::format("strategy '{}'{}", options.name, condition.empty() ? "" : " " + condition)};
}
}  // namespace

void Strategy::rejoin(ModelState /*state*/) {
  FAST_THROW(core::InvalidUsage, "strategy '{}' cannot take a worker back into a run under way", name());
}

void Strategy::representative(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "representative: output length must equal the parameter count");
  std::copy(state.params.begin(), state.params.end(), out.begin());
  comm_.allreduce(core::MutableView(out), {.op = collective::ReduceOp::avg});
}

// The check and the step touch this worker's replica and optimizer only: a computation of no
// simulated time (runtime::Context::compute_overlapped), which `sim` runs beside the other
// workers' of the same instant.
bool Strategy::apply_update(const StepInput& input, NonFinitePolicy policy, bool averaged) {
  bool finite = false;
  comm_.context().compute_overlapped(0, [&] {
    finite = core::all_finite(input.state.grads);
    if (finite) input.optimizer.step(input.state.params, input.state.grads, input.lr);
  });
  if (finite) return true;
  report_non_finite(input, policy, "skipped step", averaged);
  return false;
}

Strategy::TakenGradient Strategy::take_gradient_first(const StepInput& input) {
  if (!input.optimizer.takes_gradient_first() || comm_.elastic()) return {};
  TakenGradient taken{.scratch = input.state.grads};
  comm_.context().compute_overlapped(0, [&] {
    taken.finite = core::all_finite(input.state.grads);
    if (taken.finite) input.optimizer.take_gradient(input.state.grads);
  });
  return taken;
}

bool Strategy::finish_update(const StepInput& input, const TakenGradient& taken, NonFinitePolicy policy) {
  if (taken.scratch.empty()) return apply_update(input, policy);
  if (taken.finite) {
    comm_.context().compute_overlapped(0, [&] { input.optimizer.apply_taken(input.state.params, input.lr); });
    return true;
  }
  report_non_finite(input, policy, "skipped step");
  return false;
}

void Strategy::report_non_finite(const StepInput& input, NonFinitePolicy policy, std::string_view what,
                                 bool averaged) const {
  const int rank = comm_.rank();
  // Steps counted as taken, from 1 (the metrics' records and the divergence messages count so).
  if (policy == NonFinitePolicy::error)
    FAST_THROW(core::InvalidArgument,
               "{}: the {} worker {} applies at step {} holds NaN or infinity{}; non_finite = error", name(),
               averaged ? "averaged gradient" : "gradient", rank, input.step + 1,
               averaged ? " (any worker's gradient may be the cause)" : "");
  if (averaged && rank != comm_.members().front()) return;  // the same on every worker: said once
  const std::int64_t n = ++non_finite_reports_;
  constexpr std::int64_t kNonFiniteWarnings = 3;
  std::int64_t power = 10;
  while (power < n && power <= std::numeric_limits<std::int64_t>::max() / 10) power *= 10;
  if (n > kNonFiniteWarnings && n != power) return;
  core::log(core::LogLevel::warn, "{}: worker {} {} {}: {}{}", name(), rank, what, input.step + 1,
            averaged ? "the averaged gradient holds NaN or infinity (any worker's gradient may be the cause)"
                     : "its gradient holds NaN or infinity",
            n == kNonFiniteWarnings  ? std::string("; the next are logged at the 10th, 100th, ... (the summary's "
                                                    "skipped_steps counts every one)")
            : n > kNonFiniteWarnings ? fmt::format(" ({} such steps so far)", n)
                                     : std::string());
}

std::vector<float> Strategy::common_start(ModelState state) {
  comm_.broadcast(core::MutableView(state.params), 0);
  return {state.params.begin(), state.params.end()};
}

bool Strategy::compresses(const StrategyOptions& options) {
  return !compress::make_codec(options.compress)->lossless();
}

collective::WindowOptions Strategy::codec_window(const StrategyOptions& options, const core::Layout* layout) {
  return {.codec = options.compress, .seed = options.seed, .layout = layout, .meter = &meter_};
}

double default_consensus_step(const std::string& codec) { return compress::make_codec(codec)->consensus_step(); }

void validate_dgc(const StrategyOptions& options) {
  if (!options.dgc) return;
  if (const auto refusal = lacks(options, &StrategyRegistration::sends_gradients))
    FAST_THROW(core::InvalidArgument,
               "dgc: applies to the strategies that send gradients ({}); {} sends models "
               "(docs/compression.md, \"Deep Gradient Compression\")",
               refusal->holders, refusal->who);
  FAST_ENFORCE(compress::make_codec(options.compress)->keep_ratio() > 0,
               "dgc: needs a sparsifying codec with a keep ratio (compress = topk:ratio=R or randk:ratio=R); got "
               "compress = '{}'",
               options.compress);
  const std::string& opt = options.optimizer.name;
  FAST_ENFORCE(opt == "sgd" || opt == "momentum" || opt == "nesterov",
               "dgc: needs optimizer sgd, momentum or nesterov (its momentum is corrected on each worker); got "
               "optimizer = '{}'",
               opt);
  // dgc_clip and dgc_warmup_ratio are declared options (shared_options.cpp); make_strategy()
  // checks them against their declarations. dgc_warmup_steps is filled in by the framework.
  FAST_ENFORCE(options.dgc_warmup_steps >= 0, "dgc: dgc_warmup_steps must be >= 0, got {}", options.dgc_warmup_steps);
}

void validate_external_optimizer(const StrategyOptions& options) {
  if (const auto refusal = lacks(options, &StrategyRegistration::external_optimizer))
    FAST_THROW(core::InvalidArgument,
               "a framework's own optimizer (torch.optim) steps on the averaged gradient with {}, whose whole "
               "update is that one step; {} updates the model in its own way (it mixes models, or a server "
               "steps), so FAST's optimizer is needed: give optimizer='sgd', 'adamw', ... (docs/python.md)",
               refusal->holders, refusal->who);
  FAST_ENFORCE(!options.dgc,
               "dgc: Deep Gradient Compression corrects the momentum on each worker before the exchange, with "
               "FAST's optimizer; it does not go with a framework's own optimizer (dgc=False)");
}

collective::SparseReduce parse_sparse_reduce(const std::string& name) {
  if (name == "auto") return collective::SparseReduce::auto_choice;
  if (name == "gather") return collective::SparseReduce::gather;
  if (name == "dense") return collective::SparseReduce::dense;
  FAST_THROW(core::InvalidArgument, "strategy: option 'sparse_allreduce' must be one of auto, gather, dense; got '{}'",
             name);
}

optim::OptimizerOptions dgc_update_optimizer(const optim::OptimizerOptions& options) {
  return {.name = "sgd", .lr = options.lr};
}

std::unique_ptr<compress::Dgc> Strategy::make_dgc(const StrategyOptions& options, std::size_t numel) const {
  if (!options.dgc) return nullptr;
  validate_dgc(options);
  const optim::OptimizerOptions& opt = options.optimizer;
  const bool momentum = opt.name != "sgd";
  return std::make_unique<compress::Dgc>(
      compress::DgcOptions{.momentum = momentum ? opt.momentum : 0.0,
                           .dampening = momentum ? opt.dampening : 0.0,
                           .nesterov = opt.name == "nesterov",
                           .weight_decay = opt.weight_decay,
                           .clip_norm = options.dgc_clip,
                           .workers = comm_.size(),
                           .masking = options.dgc_masking,
                           .ratio = compress::make_codec(options.compress)->keep_ratio(),
                           .warmup_ratio = options.dgc_warmup_ratio,
                           .warmup_steps = options.dgc_warmup_steps,
                           .local_view = options.dgc_local_view},
      numel);
}

void Strategy::dgc_sent(compress::Dgc& dgc, compress::ErrorFeedback& feedback, std::uint64_t key, std::size_t offset) {
  if (!dgc.options().masking) return;
  dgc.mask(feedback.last_sent(), offset);
  feedback.clear_sent(key);
}

std::span<const float> Strategy::dgc_model(const compress::Dgc* dgc, std::span<const float> params) {
  return dgc != nullptr && dgc->options().local_view ? dgc->shared() : params;
}

// The options every strategy shares: aggregate (a robust rule only where the strategy's trait
// robust_aggregate holds, on each worker's whole gradient, so no codec and no dgc) and fault_inject.
void builtin::check_common(const StrategyOptions& options, int workers) {
  if (!Aggregate::parse(options.aggregate, workers).is_mean()) {
    if (const auto refusal = lacks(options, &StrategyRegistration::robust_aggregate))
      FAST_THROW(core::InvalidArgument,
                 "aggregate '{}': the robust rules apply to {}; {} takes aggregate = mean (docs/faults.md)",
                 options.aggregate, refusal->holders, refusal->who);
    FAST_ENFORCE(!Strategy::compresses(options) && !options.dgc,
                 "aggregate '{}': the robust rules combine every worker's whole gradient; they do not go with "
                 "compress = '{}'{} (use aggregate = mean)",
                 options.aggregate, options.compress, options.dgc ? " and dgc" : "");
  }
  (void)FaultInjection::parse(options.fault_inject, workers);
}

std::string builtin::rejoin_without_codec(const StrategyOptions& options, int /*rank*/) {
  if (!Strategy::compresses(options)) return {};
  return fmt::format(
      "compress = '{}' keeps per-link codec references that a new process does not have; "
      "rejoining supports compress = none",
      options.compress);
}

std::string builtin::elastic_with_mean(const StrategyOptions& options) {
  if (options.aggregate != "mean")
    return fmt::format("aggregate = '{}' is sized for the whole world's gradients", options.aggregate);
  return {};
}

std::string builtin::elastic_without_world_state(const StrategyOptions& options, std::string_view dgc_keeps,
                                                 std::string_view codec_keeps) {
  if (options.dgc) return fmt::format("dgc = true {}", dgc_keeps);
  if (Strategy::compresses(options)) return fmt::format("compress = '{}' {}", options.compress, codec_keeps);
  return elastic_with_mean(options);
}

std::string builtin::save_during_run_without_codec(const StrategyOptions& options) {
  if (!Strategy::compresses(options) && !options.dgc) return {};
  return fmt::format(
      "with compress = '{}'{} the links' codec state changes with every exchange, on both sides, so a worker "
      "cannot save it while the others train",
      options.compress, options.dgc ? " and dgc" : "");
}

}  // namespace fast::strategy
