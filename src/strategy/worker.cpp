#include "fast/strategy/worker.hpp"

#include <algorithm>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/runtime/registry.hpp"
#include "fast/strategy/optimizer_state.hpp"
#include "fast/strategy/registry.hpp"

namespace fast::strategy {

namespace {
ModelState checked(ModelState state) {
  FAST_ENFORCE_EQ(state.params.size(), state.grads.size(), "Worker: parameters and gradients must have one length");
  std::size_t next = 0;
  for (const core::TensorBlock& block : state.layout) {
    FAST_ENFORCE_EQ(block.offset, next, "Worker: layout block '{}' must start where the previous one ends", block.name);
    FAST_ENFORCE(block.rows > 0 && block.numel % block.rows == 0,
                 "Worker: layout block '{}': {} elements do not split into {} rows", block.name, block.numel,
                 block.rows);
    next += block.numel;
  }
  if (!state.layout.empty())
    FAST_ENFORCE_EQ(next, state.params.size(), "Worker: the layout must cover every parameter");
  return state;
}
StrategyOptions for_strategy(const WorkerOptions& options) {
  StrategyOptions s = options.strategy;
  s.optimizer = options.optimizer;
  return s;
}

// The optimizer of WorkerOptions::external_optimizer: its step leaves the parameters as they are
// (the caller's optimizer steps on the aggregated gradient left in the gradient buffer). No state.
class CallerSteps final : public optim::Optimizer {
 public:
  explicit CallerSteps(std::size_t numel) : numel_(numel) {}
  void step(std::span<float> /*params*/, std::span<const float> /*grads*/, double /*lr*/) override { ++steps_; }
  std::string_view name() const override { return "external"; }
  std::size_t numel() const override { return numel_; }
  std::size_t state_buffers() const override { return 0; }
  std::vector<std::span<float>> state() override { return {}; }
  std::int64_t steps_taken() const override { return steps_; }
  void set_steps_taken(std::int64_t steps) override {
    FAST_ENFORCE(steps >= 0, "optimizer steps taken must be >= 0, got {}", steps);
    steps_ = steps;
  }

 private:
  std::size_t numel_;
  std::int64_t steps_ = 0;
};

std::unique_ptr<optim::Optimizer> optimizer_for(const WorkerOptions& options, std::size_t numel) {
  if (!options.external_optimizer) return optim::make_optimizer(options.optimizer, numel);
  validate_external_optimizer(for_strategy(options));
  return std::make_unique<CallerSteps>(numel);
}

// The schedule gives no rate to a caller's optimizer: a constant one, whatever was asked.
optim::ScheduleOptions schedule_for(const WorkerOptions& options) {
  return options.external_optimizer ? optim::ScheduleOptions{.name = "constant"} : options.schedule;
}
}  // namespace

bool asynchronous_strategy(const StrategyOptions& options) {
  return find_registration(options.name).asynchronous.holds(options);
}

std::string rejoin_refusal(const StrategyOptions& options, int rank) {
  const StrategyRegistration r = find_registration(options.name);
  const auto rejoins = [](const StrategyRegistration& s) { return static_cast<bool>(s.rejoin); };
  if (!r.asynchronous.holds(options)) {
    const std::string condition = r.asynchronous.condition_for(options);
    return fmt::format(
        "strategy '{}'{} is synchronous: a lost worker ends the run, so none can be taken back; "
        "rejoining supports {}",
        options.name, condition.empty() ? "" : " " + condition,
        strategies_with(&StrategyRegistration::asynchronous, rejoins));
  }
  if (!r.rejoin)
    return fmt::format("strategy '{}' does not take a lost worker back; rejoining supports {}", options.name,
                       strategies_with(&StrategyRegistration::asynchronous, rejoins));
  return r.rejoin(options, rank);
}

std::string periodic_checkpoint_refusal(const StrategyOptions& options) {
  const StrategyRegistration r = find_registration(options.name);
  if (!r.asynchronous.holds(options)) return {};
  if (!r.save_during_run)
    return "its workers are never at one step together, and it declares no checkpoint of a worker alone during "
           "the run (StrategyRegistration::save_during_run)";
  return r.save_during_run(options);
}

void Worker::rejoin(std::int64_t step) {
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_, "Worker::rejoin: called after finish()");
  FAST_ENFORCE_AS(core::InvalidUsage, step >= 0, "Worker::rejoin: step must be >= 0, got {}", step);
  if (replicas_ && strategy_->rejoins_from_published_replica()) take_live_replica();
  strategy_->rejoin(state_);
  steps_ = step;
}

void Worker::take_live_replica() {
  std::vector<int> others;
  for (int p = 0; p < comm_.size(); ++p)
    if (p != comm_.rank()) others.push_back(p);
  if (replicas_->get_first_live(others, core::MutableView(state_.params)) < 0)
    FAST_THROW(core::PeerLost, "worker {} rejoins but no other worker is live to take a model from", comm_.rank());
}

Worker::Worker(runtime::Context& ctx, const WorkerOptions& options, ModelState state)
    : comm_(ctx, options.communicator),
      state_(checked(state)),
      optimizer_(optimizer_for(options, state.params.size())),
      schedule_(options.external_optimizer ? 0.0 : options.optimizer.lr, schedule_for(options)),
      strategy_(make_strategy(for_strategy(options), comm_)),
      elastic_lr_(options.external_optimizer ? ElasticLr::keep : options.elastic_lr),
      fault_(FaultInjection::parse(options.strategy.fault_inject, comm_.size())) {
  const bool declared_asynchronous = asynchronous_strategy(options.strategy);
  FAST_ENFORCE(strategy_->asynchronous() == declared_asynchronous,
               "Worker: strategy '{}' is {} (Strategy::asynchronous()), but its registration declares it {} for these "
               "options (StrategyRegistration::asynchronous, fast/strategy/registry.hpp)",
               options.strategy.name, strategy_->asynchronous() ? "asynchronous" : "synchronous",
               declared_asynchronous ? "asynchronous" : "synchronous");
  FAST_ENFORCE(!fault_.needs_elastic() || comm_.elastic(),
               "fault_inject '{}': {} needs an elastic run (elastic = true, --elastic): only an elastic synchronous "
               "run admits a worker taken back",
               options.strategy.fault_inject, fault_.kind_name());
  FAST_ENFORCE(!fault_.exits_in_the_end() || comm_.elastic() || strategy_->asynchronous(),
               "fault_inject '{}': {} needs an elastic run (elastic = true, --elastic) or an asynchronous strategy, "
               "whose end survives the loss; strategy '{}' is synchronous",
               options.strategy.fault_inject, fault_.kind_name(), options.strategy.name);
  const std::string shared = fault_.process_refusal(options.strategy.fault_inject, ctx.runtime_name(),
                                                    runtime::find_runtime(ctx.runtime_name()).multi_process);
  FAST_ENFORCE(shared.empty(), "{}", shared);
  if (comm_.rank() == 0)  // once per run: settings a run of this length is too short for
    for (const std::string& warning : short_run_warnings(for_strategy(options), options.schedule.total_steps))
      core::log(core::LogLevel::warn, "strategy '{}': {}", options.strategy.name, warning);
  strategy_->attach(state_);
  // Every worker takes the same branch (same strategy), so the window's creation stays collective.
  if (strategy_->asynchronous() && strategy_->replica_window() == nullptr) {
    published_.assign(state_.params.begin(), state_.params.end());
    replicas_ =
        std::make_unique<collective::Window>(comm_, "worker.replicas", core::MutableView(std::span<float>(published_)));
  }
}

Worker::~Worker() = default;

double Worker::next_lr() const {
  const double lr = schedule_.lr_at(steps_);
  if (elastic_lr_ == ElasticLr::keep || !comm_.elastic()) return lr;
  return lr * static_cast<double>(comm_.group_size()) / static_cast<double>(comm_.size());
}

StepReport Worker::step() {
  check_not_partway("step");
  const double lr = next_lr();
  if (fault_.active()) fault_.apply(comm_.rank(), state_.grads);  // fault_inject: tests and demonstrations
  const StepOutcome outcome = strategy_step(lr);
  StepReport report{.step = steps_, .lr = lr, .applied = outcome.applied, .comm_seconds = outcome.comm_seconds};
  ++steps_;
  if (replicas_) {
    collective::Window::Local local = replicas_->local();
    std::copy(state_.params.begin(), state_.params.end(), published_.begin());
    local.bump();
    comm_.context().memory_traffic(2.0 * static_cast<double>(published_.size() * sizeof(float)));  // the copy
  }
  if (!outcome.applied) ++skipped_;
  comm_seconds_ += outcome.comm_seconds;
  return report;
}

StepOutcome Worker::strategy_step(double lr) {
  const StepInput input{.state = state_, .optimizer = *optimizer_, .lr = lr, .step = steps_};
  if (!comm_.elastic() || !strategy_->changes_state_before_last_collective(steps_)) return strategy_->step(input);
  const Checkpoint before = save();  // a failed step is undone: regroup_survivors compares whole steps
  try {
    return strategy_->step(input);
  } catch (const core::PeerLost&) {
    restore(before, "the state before the failed step");
    throw;
  }
}

void Worker::representative(std::span<float> out) {
  // The workers of an asynchronous strategy step at their own pace: one that reads the model and
  // leaves before finish() may leave the others waiting on its server or window for ever.
  FAST_ENFORCE_AS(core::InvalidUsage, finished_ || !strategy_->asynchronous(),
                  "Worker::representative: strategy '{}' is asynchronous: call finish() first (the other workers "
                  "may still be stepping); for the model during the run, snapshot()",
                  strategy_->name());
  strategy_->representative(state_, out);
}

std::span<const float> Worker::representative_in_place() const { return strategy_->representative_in_place(state_); }

std::size_t Worker::state_bytes() const {
  const std::size_t replica = state_.params.size_bytes() + state_.grads.size_bytes();
  const std::size_t optimizer =
      strategy_->steps_worker_optimizer() ? optimizer_->state_buffers() * optimizer_->numel() * sizeof(float) : 0;
  return replica + optimizer + published_.size() * sizeof(float) + strategy_->state_bytes();
}

void Worker::finish() {
  if (finished_) return;
  finished_ = true;
  const double t0 = comm_.context().now();
  // Asynchronous strategies go on without lost workers: everything collective from here on runs
  // among the survivors.
  if (strategy_->asynchronous()) comm_.exclude_lost();
  strategy_->finish(state_);
  if (replicas_) replicas_->close();
  comm_seconds_ += comm_.context().now() - t0;
}

SnapshotResult Worker::snapshot(std::span<float> out) {
  FAST_ENFORCE_AS(core::InvalidUsage, strategy_->asynchronous(),
                  "Worker::snapshot: strategy '{}' is synchronous; use the collective representative()",
                  strategy_->name());
  FAST_ENFORCE_EQ(out.size(), state_.params.size(), "Worker::snapshot: output length must equal the parameter count");
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_, "Worker::snapshot: called after finish()");
  collective::Window* window = replicas_ ? replicas_.get() : strategy_->replica_window();
  // One pass over the replicas: mean ||x_i - avg||^2 = mean ||x_i||^2 - ||avg||^2, in double.
  // Lost workers' replicas are left out: the mean is over the replicas read.
  runtime::Context& ctx = comm_.context();
  int n = 0;
  const std::size_t len = out.size();
  std::vector<double> sum(len, 0.0);
  std::vector<float> replica(len);
  double sum_sq = 0;
  for (int p = 0; p < comm_.size(); ++p) {
    if (!ctx.alive(p)) continue;
    const double t0 = ctx.now();
    try {
      window->get(p, core::MutableView(std::span<float>(replica))).wait();
    } catch (const core::PeerLost&) {
      if (!runtime::lost_since(ctx, p, t0)) throw;
      continue;  // lost during the read
    }
    ++n;
    for (std::size_t i = 0; i < len; ++i) {
      const double x = replica[i];
      sum[i] += x;
      sum_sq += x * x;
    }
  }
  SnapshotResult result;
  double avg_sq = 0;
  for (std::size_t i = 0; i < len; ++i) {
    const double a = sum[i] / n;
    avg_sq += a * a;
  }
  result.consensus_distance = std::max(0.0, sum_sq / n - avg_sq);
  if (!strategy_->snapshot(state_, out))
    for (std::size_t i = 0; i < len; ++i) out[i] = static_cast<float>(sum[i] / n);
  return result;
}

void Worker::check_not_partway(std::string_view call) const {
  FAST_ENFORCE_AS(core::InvalidUsage, !optimizer_->gradient_taken(),
                  "Worker::{}: worker {}'s step {} failed after its optimizer took the gradient (Optimizer::"
                  "take_gradient) and before the update: its state is partway through that step, so it can neither "
                  "step nor save again; end the run, or restore() a checkpoint from before the failure",
                  call, comm_.rank(), steps_);
}

Checkpoint Worker::save() {
  check_not_partway("save");
  Checkpoint out;
  out.arrays.emplace("params", std::vector<float>(state_.params.begin(), state_.params.end()));
  save_optimizer("optimizer", *optimizer_, out);
  out.integers.emplace("steps", steps_);
  out.integers.emplace("skipped_steps", skipped_);
  strategy_->save_state(out);
  return out;
}

void Worker::restore(const Checkpoint& checkpoint, std::string_view source) {
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_, "Worker::restore: after finish()");
  const std::size_t n = state_.params.size();
  // Everything is checked before anything changes.
  const std::vector<float>& params = checkpoint.array("params", n, source);
  SavedOptimizer optimizer("optimizer", checkpoint, source, *optimizer_);
  const std::int64_t optimizer_steps = optimizer.steps();
  const std::int64_t steps = checkpoint.integer("steps", source);
  const std::int64_t skipped = checkpoint.integer("skipped_steps", source);
  // optimizer.steps <= steps holds where the worker's optimizer takes the steps (not under ps, whose
  // servers do).
  if (steps < 0 || skipped < 0 || skipped > steps || optimizer_steps < 0 || optimizer_steps > steps)
    FAST_THROW(core::IoError, "checkpoint '{}': inconsistent counts: steps {}, skipped_steps {}, optimizer.steps {}",
               source, steps, skipped, optimizer_steps);
  std::copy(params.begin(), params.end(), state_.params.begin());
  optimizer.apply();
  steps_ = steps;
  skipped_ = skipped;
  strategy_->restore_state(checkpoint, source, state_);
  if (replicas_) {
    collective::Window::Local local = replicas_->local();
    std::copy(state_.params.begin(), state_.params.end(), published_.begin());
    local.bump();
  }
}

}  // namespace fast::strategy
