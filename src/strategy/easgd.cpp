#include "fast/strategy/easgd.hpp"
#include "builtin.hpp"

#include <algorithm>
#include <cmath>

#include "fast/core/error.hpp"
#include "fast/core/saved_state.hpp"

namespace fast::strategy {

EasgdStrategy::EasgdStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {}

EasgdStrategy::~EasgdStrategy() = default;

void EasgdStrategy::attach(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ == nullptr, "easgd: attach() called twice");
  const std::size_t len = state.params.size();
  if (compresses(options_)) start_ = common_start(state);
  // The centre starts at the average of the initial replicas (identical replicas: their value). A
  // worker rejoining a run under way (never worker 0) takes the all-reduce's turn without it: its
  // replica comes from the centre (rejoin()).
  std::vector<float> average(state.params.begin(), state.params.end());
  if (comm_.joining())
    comm_.skip_collective();
  else
    comm_.allreduce(core::MutableView(std::span<float>(average)), {.op = collective::ReduceOp::avg});
  if (comm_.rank() == 0) centre_ = std::move(average);
  read_.resize(len);
  diff_.resize(len);
  layout_.assign(state.layout.begin(), state.layout.end());
  window_ =
      std::make_unique<collective::Window>(comm_, "easgd.centre", core::MutableView(std::span<float>(centre_)),
                                           with_start(codec_window(options_, layout_.empty() ? nullptr : &layout_)));
}

// The centre (worker 0's window) starts at the common initial model. Only worker 0 exposes a
// tensor, of the model's length (what a worker that rejoins the run cannot all-gather).
collective::WindowOptions EasgdStrategy::with_start(collective::WindowOptions options) const {
  options.initial = [this](int owner) {
    return owner == 0 ? std::span<const float>(start_) : std::span<const float>();
  };
  options.joining_numel = [n = read_.size()](int owner) { return owner == 0 ? n : std::size_t{0}; };
  return options;
}

namespace {
// Runs fn (window operations on the centre); a PeerLost there means the centre's worker is gone.
template <typename Fn>
void with_centre(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const core::PeerLost& e) {
    FAST_THROW(core::PeerLost,
               "easgd: {}: the centre's host (worker 0) was lost, training cannot go on without "
               "the centre: {}",
               what, e.what());
  }
}
}  // namespace

void EasgdStrategy::exchange(std::span<float> params) {
  const auto alpha = static_cast<float>(options_.alpha);
  const std::size_t len = params.size();
  if (comm_.rank() == 0) {
    // The owner's exchange: the same arithmetic under the window lock, no messages, no waiting.
    collective::Window::Local local = window_->local();
    for (std::size_t i = 0; i < len; ++i) {
      const float d = alpha * (params[i] - centre_[i]);
      params[i] -= d;
      centre_[i] += d;
    }
    local.bump();
  } else {
    with_centre("exchange", [&] { window_->get(0, core::MutableView(std::span<float>(read_))).wait(); });
    for (std::size_t i = 0; i < len; ++i) {
      diff_[i] = alpha * (params[i] - read_[i]);
      params[i] -= diff_[i];
    }
    with_centre("exchange", [&] { window_->accumulate(0, core::ConstView(std::span<const float>(diff_))).wait(); });
  }
  ++exchanges_;
}

StepOutcome EasgdStrategy::step(const StepInput& input) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "easgd: step() needs attach() first and no finish() yet");
  FAST_ENFORCE_EQ(input.state.params.size(), read_.size(), "easgd: the parameter count changed since attach()");
  StepOutcome outcome;
  // A non-finite gradient only skips (or, with non_finite = error, fails) this worker's local
  // update; the exchange below is one-sided, so nobody waits on this worker's decision.
  outcome.applied = apply_update(input, options_.non_finite);
  if ((input.step + 1) % options_.tau == 0) {
    runtime::Context& ctx = comm_.context();
    const double t0 = ctx.now();
    exchange(input.state.params);
    outcome.comm_seconds = ctx.now() - t0;
  }
  return outcome;
}

void EasgdStrategy::representative(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(),
                  "easgd: representative output length must equal the parameter count");
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr, "easgd: representative() needs attach() first");
  if (comm_.rank() == 0) {
    collective::Window::Local local = window_->local();
    std::copy(centre_.begin(), centre_.end(), out.begin());
  }
  comm_.broadcast(core::MutableView(out), 0);
}

void EasgdStrategy::save_state(Checkpoint& out) {
  // During the run (a periodic checkpoint): the centre as the window holds it now (worker 0,
  // under the window's guard); only a codec's links change with every exchange.
  FAST_ENFORCE_AS(core::InvalidUsage, finished_ || !compresses(options_),
                  "easgd: save_state() before finish() with compress = '{}' (the links' references change with "
                  "every exchange: the checkpoint is taken once every exchange has landed)",
                  options_.compress);
  window_->save_links("easgd.window", out);  // with a codec: its links' references
  if (comm_.rank() != 0) return;
  collective::Window::Local local = window_->local();
  out.arrays.insert_or_assign("easgd.centre", centre_);
}

void EasgdStrategy::restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState /*state*/) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "easgd: restore_state() must come after attach() and before finish()");
  // Worker 0's centre is read (and checked) before anything changes.
  const std::vector<float>* centre =
      comm_.rank() == 0 ? &checkpoint.array("easgd.centre", centre_.size(), source) : nullptr;
  window_->restore_links("easgd.window", checkpoint, source);
  if (centre == nullptr) return;
  collective::Window::Local local = window_->local();
  std::copy(centre->begin(), centre->end(), centre_.begin());
  local.bump();
}

void EasgdStrategy::rejoin(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "easgd: rejoin() before attach() or after finish()");
  FAST_ENFORCE_AS(core::InvalidUsage, comm_.rank() != 0 && !compresses(options_),
                  "easgd: rejoin of worker {} with compress = '{}': only workers other than 0 (the centre's) rejoin, "
                  "without a codec",
                  comm_.rank(), options_.compress);
  FAST_ENFORCE_EQ(state.params.size(), read_.size(), "easgd: the parameter count changed since attach()");
  with_centre("rejoin",
              [&] { window_->get(0, core::MutableView(state.params), 0, nullptr, collective::Wire::exact).wait(); });
}

void EasgdStrategy::finish(ModelState /*state*/) {
  if (finished_ || window_ == nullptr) return;
  finished_ = true;
  with_centre("finish", [&] { comm_.context().ensure_alive(0); });
  window_->close();
}

bool EasgdStrategy::snapshot(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "easgd: snapshot output length must equal the parameter count");
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "easgd: snapshot() needs attach() first and no finish() yet (use representative())");
  if (comm_.rank() == 0) {
    collective::Window::Local local = window_->local();
    std::copy(centre_.begin(), centre_.end(), out.begin());
  } else {
    with_centre("snapshot",
                [&] { window_->get(0, core::MutableView(out), 0, nullptr, collective::Wire::exact).wait(); });
  }
  return true;
}

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::easgd_registration() {
  return {
      .name = "easgd",
      .summary = "elastic averaging",
      .make = factory_of<EasgdStrategy>(),
      .options =
          {StrategyOption::field("alpha", &StrategyOptions::alpha, "elastic moving rate.").greater_than(0).less_than(1),
           StrategyOption::field("tau", &StrategyOptions::tau, "local steps between elastic exchanges with the centre.")
               .at_least(1)},
      .asynchronous = true,
      .rejoin = &rejoin_without_codec,
      .save_during_run = &save_during_run_without_codec};
}

}  // namespace fast::strategy
