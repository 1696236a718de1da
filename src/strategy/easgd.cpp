#include "fast/strategy/easgd.hpp"
#include "builtin.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/saved_state.hpp"
#include "fast/runtime/successor.hpp"

namespace fast::strategy {

EasgdStrategy::EasgdStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {}

EasgdStrategy::~EasgdStrategy() = default;

void EasgdStrategy::attach(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ == nullptr, "easgd: attach() called twice");
  const std::size_t len = state.params.size();
  if (compresses(options_)) start_ = common_start(state);
  // The centre starts at the average of the initial replicas (identical replicas: their value). A
  // worker rejoining a run under way takes the all-reduce's turn without it: its replica comes
  // from the centre (rejoin()). Without a codec every worker keeps a copy of the centre, exposed in
  // the window, so that a survivor can hold it when its host is lost (move_centre()).
  std::vector<float> average(state.params.begin(), state.params.end());
  if (comm_.joining())
    comm_.skip_collective();
  else
    comm_.allreduce(core::MutableView(std::span<float>(average)), {.op = collective::ReduceOp::avg});
  if (comm_.rank() == 0 || copies()) centre_ = std::move(average);
  read_.resize(len);
  diff_.resize(len);
  layout_.assign(state.layout.begin(), state.layout.end());
  window_ =
      std::make_unique<collective::Window>(comm_, "easgd.centre", core::MutableView(std::span<float>(centre_)),
                                           with_start(codec_window(options_, layout_.empty() ? nullptr : &layout_)));
}

// The centre (worker 0's window) starts at the common initial model. With a codec only worker 0
// exposes a tensor, of the model's length (what a worker that rejoins the run cannot all-gather);
// without one every worker exposes its copy of the centre.
collective::WindowOptions EasgdStrategy::with_start(collective::WindowOptions options) const {
  options.initial = [this](int owner) {
    return owner == 0 ? std::span<const float>(start_) : std::span<const float>();
  };
  options.joining_numel = [n = read_.size(), all = copies()](int owner) {
    return owner == 0 || all ? n : std::size_t{0};
  };
  return options;
}

template <typename Fn>
void EasgdStrategy::with_centre(const char* what, Fn&& fn) {
  for (;;) {
    try {
      // A host reported lost may have been taken back by a new process since, whose tensor is a
      // copy: move on before asking it.
      if (copies() && runtime::ever_lost(comm_.context(), host_)) move_centre("the runtime reported it lost");
      fn();
      return;
    } catch (const core::PeerLost& e) {
      if (!copies() || !runtime::ever_lost(comm_.context(), host_))
        FAST_THROW(core::PeerLost,
                   "easgd: {}: the centre's host (worker {}) was lost, training cannot go on without "
                   "the centre{}: {}",
                   what, host_, copies() ? "" : " (with a codec no other worker keeps a copy of it)", e.what());
      move_centre(e.what());
    }
  }
}

void EasgdStrategy::move_centre(const std::string& why) {
  runtime::Context& ctx = comm_.context();
  const int lost = host_;
  const int next = runtime::successor(ctx, host_);
  FAST_ENFORCE_AS(core::PeerLost, next >= 0,
                  "easgd: the centre's host (worker {}) was lost, and no live worker above it is left to hold the "
                  "centre: {}",
                  lost, why);
  host_ = next;
  if (host_ == ctx.rank())
    core::log(core::LogLevel::warn,
              "easgd: the centre's host (worker {}) was lost; worker {} holds the centre from now on, from its copy "
              "of the centre at its last exchange",
              lost, host_);
}

void EasgdStrategy::exchange(std::span<float> params) {
  const auto alpha = static_cast<float>(options_.alpha);
  const std::size_t len = params.size();
  if (comm_.rank() == host_) {
    // The owner's exchange: the same arithmetic under the window lock, no messages, no waiting.
    collective::Window::Local local = window_->local();
    for (std::size_t i = 0; i < len; ++i) {
      const float d = alpha * (params[i] - centre_[i]);
      params[i] -= d;
      centre_[i] += d;
    }
    local.bump();
    ++exchanges_;
    return;
  }
  with_centre("exchange", [&] {
    if (comm_.rank() != host_) window_->get(host_, core::MutableView(std::span<float>(read_))).wait();
  });
  if (comm_.rank() == host_) return exchange(params);  // this worker holds the centre now
  for (std::size_t i = 0; i < len; ++i) {
    diff_[i] = alpha * (params[i] - read_[i]);
    params[i] -= diff_[i];
  }
  // An accumulate that fails on a lost host goes to the next one, so the centre it holds moves by d
  // as this replica did.
  with_centre("exchange", [&] {
    if (comm_.rank() != host_) {
      window_->accumulate(host_, core::ConstView(std::span<const float>(diff_))).wait();
      return;
    }
    collective::Window::Local local = window_->local();
    for (std::size_t i = 0; i < len; ++i) centre_[i] += diff_[i];
    local.bump();
  });
  if (copies()) keep_copy();
  ++exchanges_;
}

void EasgdStrategy::keep_copy() {
  // Only while nobody wrote to this worker's copy: once somebody did, it is the centre.
  collective::Window::Local local = window_->local();
  if (local.version() != 0 || comm_.rank() == host_) return;
  for (std::size_t i = 0; i < centre_.size(); ++i) centre_[i] = read_[i] + diff_[i];
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
  // The centre's host: worker 0, or with copies the member whose exposed tensor was written most
  // (the host's counts every exchange; a copy's, none), the first such member on a tie.
  int root = 0;
  if (copies()) {
    const double mine = static_cast<double>(finished_ ? final_version_ : window_->local().version());
    std::vector<double> versions(static_cast<std::size_t>(comm_.group_size()));
    comm_.allgather(core::ConstView(std::span<const double>(&mine, 1)), core::MutableView(std::span<double>(versions)));
    const auto most = std::max_element(versions.begin(), versions.end());
    root = comm_.members()[static_cast<std::size_t>(most - versions.begin())];
  }
  if (comm_.rank() == root) {
    collective::Window::Local local = window_->local();
    std::copy(centre_.begin(), centre_.end(), out.begin());
  }
  comm_.broadcast(core::MutableView(out), root);
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
  FAST_ENFORCE_AS(core::InvalidUsage, copies(),
                  "easgd: rejoin of worker {} with compress = '{}': a worker rejoins only without a codec",
                  comm_.rank(), options_.compress);
  FAST_ENFORCE_EQ(state.params.size(), read_.size(), "easgd: the parameter count changed since attach()");
  // The host is the live worker whose exposed tensor was written most (the others' are copies,
  // never written by a request); this worker's replica and copy become that centre.
  // Each live worker's version is read with its first value only; then the host's whole centre.
  std::uint64_t most = 0;
  host_ = -1;
  for (int r = 0; r < comm_.context().size(); ++r) {
    if (r == comm_.rank() || !comm_.context().alive(r)) continue;
    std::uint64_t version = 0;
    try {
      window_->get(r, core::MutableView(std::span<float>(read_).first(1)), 0, &version, collective::Wire::exact).wait();
    } catch (const core::PeerLost&) {
      continue;  // lost meanwhile
    }
    if (host_ < 0 || version > most) {
      most = version;
      host_ = r;
    }
  }
  FAST_ENFORCE_AS(core::PeerLost, host_ >= 0,
                  "easgd: worker {} rejoins, but no other worker is live to read the "
                  "centre from",
                  comm_.rank());
  with_centre("rejoin", [&] {
    window_->get(host_, core::MutableView(state.params), 0, nullptr, collective::Wire::exact).wait();
  });
  collective::Window::Local local = window_->local();
  std::copy(state.params.begin(), state.params.end(), centre_.begin());
}

void EasgdStrategy::finish(ModelState /*state*/) {
  if (finished_ || window_ == nullptr) return;
  finished_ = true;
  with_centre("finish", [&] { comm_.context().ensure_alive(host_); });
  final_version_ = window_->local().version();
  window_->close();
}

bool EasgdStrategy::snapshot(ModelState state, std::span<float> out) {
  FAST_ENFORCE_EQ(out.size(), state.params.size(), "easgd: snapshot output length must equal the parameter count");
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "easgd: snapshot() needs attach() first and no finish() yet (use representative())");
  with_centre("snapshot", [&] {
    if (comm_.rank() != host_) {
      window_->get(host_, core::MutableView(out), 0, nullptr, collective::Wire::exact).wait();
      return;
    }
    collective::Window::Local local = window_->local();
    std::copy(centre_.begin(), centre_.end(), out.begin());
  });
  return true;
}

namespace {

// What a run of `total` steps per worker misses (StrategyOption::short_run): a worker's first
// exchange comes at its step tau (step() above).
std::optional<std::string> tau_past_run(const StrategyOptions& o, std::int64_t total) {
  if (o.tau <= total) return std::nullopt;
  return fmt::format(
      "a worker's first exchange with the centre would come at its step {}, after the run's {} steps "
      "per worker: the replicas train apart",
      o.tau, total);
}

}  // namespace

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::easgd_registration() {
  return {
      .name = "easgd",
      .summary = "elastic averaging",
      .make = factory_of<EasgdStrategy>(),
      .options =
          {StrategyOption::field("alpha", &StrategyOptions::alpha, "elastic moving rate.").greater_than(0).less_than(1),
           StrategyOption::field("tau", &StrategyOptions::tau, "local steps between elastic exchanges with the centre.")
               .at_least(1)
               .short_run(&tau_past_run)},
      .asynchronous = true,
      .rejoin = &rejoin_without_codec,
      .save_during_run = &save_during_run_without_codec};
}

}  // namespace fast::strategy
