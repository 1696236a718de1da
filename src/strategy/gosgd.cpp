#include "fast/strategy/gosgd.hpp"
#include "builtin.hpp"

#include <algorithm>
#include <cmath>

#include "fast/core/error.hpp"
#include "fast/core/saved_state.hpp"
#include "gossip.hpp"

namespace fast::strategy {

namespace {

// Below this mass a worker stops pushing until it receives some (after about 660 pushes with
// nothing received), so x_i never reaches subnormal numbers.
constexpr double kMinPushMass = 1e-200;

topology::TopologySchedule checked_schedule(const StrategyOptions& options, int n) {
  topology::TopologySchedule schedule = topology::make_schedule(options.topology, n, options.seed);
  // Periodic schedules are checked over their period; random kinds over 4N rounds.
  topology::check_connected_over(schedule, schedule.period() > 0 ? schedule.period() : std::int64_t{4} * n);
  return schedule;
}

}  // namespace

void GosgdStrategy::check_options(const StrategyOptions& options, int workers) {
  (void)checked_schedule(options, workers);
}

GosgdStrategy::GosgdStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm),
      options_(options),
      schedule_(checked_schedule(options, comm.size())),
      slots_(kMaxPending),
      pushed_to_(static_cast<std::size_t>(comm.size()), 0) {}

void GosgdStrategy::attach(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ == nullptr, "gosgd: attach() called twice");
  dim_ = state.params.size();
  inbox_.assign(dim_ + 1 + static_cast<std::size_t>(comm_.size()), 0.0);
  numerator_ = core::Buffer::pooled(core::DType::f64);
  numerator_.resize(numerator_elements(), core::DType::f64);
  x_ = numerator_.as<double>().first(dim_);
  std::copy(state.params.begin(), state.params.end(), x_.begin());
  layout_.assign(state.layout.begin(), state.layout.end());
  collective::WindowOptions window_options = codec_window(options_, layout_.empty() ? nullptr : &layout_);
  codec_ = compresses(options_);
  if (codec_) {
    start_ = common_start(state);  // every worker's model starts here, so every reference does
    std::copy(state.params.begin(), state.params.end(), x_.begin());
    window_options.initial = [this](int) { return std::span<const float>(start_); };
  }
  window_ = std::make_unique<collective::Window>(comm_, "gosgd.inbox", core::MutableView(std::span<double>(inbox_)),
                                                 std::move(window_options));
}

GosgdStrategy::~GosgdStrategy() = default;

bool GosgdStrategy::gossips(double p, std::uint64_t seed, int rank, std::int64_t step) {
  if (p >= 1) return true;
  const double u = core::uniform01(gossip_draw(seed, kGosgdCoinSalt, rank, step).next());
  return u < p;
}

int GosgdStrategy::pick_peer(const topology::TopologySchedule& schedule, std::uint64_t seed, int rank,
                             std::int64_t step) {
  const std::vector<int> out = schedule.out_neighbors(rank, step);
  if (out.empty()) return -1;
  return out[gossip_draw(seed, kGosgdPeerSalt, rank, step).below(out.size())];
}

void GosgdStrategy::wait_push(Slot& slot) {
  try {
    slot.work.wait();
  } catch (const core::PeerLost&) {
    // The receiver was lost (it may have rejoined since: a new process, which never got this
    // push): the mass and numerator it carried are lost with it.
    if (!runtime::lost_since(comm_.context(), slot.push.peer, slot.issued)) throw;
  }
}

void GosgdStrategy::retire(Slot& slot) {
  wait_push(slot);
  collective::Window::Local local = window_->local();
  slot.busy = false;
  if (slot.payload.data() == x_.data())
    numerator_ = std::move(slot.payload);  // x's buffer, pushed at the last step: x_ still views it
  else
    slot.payload = core::Buffer();  // back to the pool
}

std::span<const double> GosgdStrategy::writable_numerator(bool copy) {
  const std::span<const double> old = x_;
  if (numerator_.data() == x_.data()) return old;
  numerator_ = core::Buffer::pooled(core::DType::f64);
  numerator_.resize_to_overwrite(numerator_elements(), core::DType::f64);
  x_ = numerator_.as<double>().first(dim_);
  if (copy) std::copy(old.begin(), old.end(), x_.begin());
  return old;
}

void GosgdStrategy::release_applied() {
  for (Slot& slot : slots_)
    if (slot.busy && slot.work.is_completed()) retire(slot);  // completed: no wait
}

GosgdStrategy::Slot& GosgdStrategy::free_slot() {
  Slot* oldest = nullptr;
  for (Slot& slot : slots_) {
    if (!slot.busy) return slot;
    if (oldest == nullptr || slot.order < oldest->order) oldest = &slot;
  }
  // Every push in flight: wait for the oldest to be applied (the receiver's service answers while
  // the receiver computes).
  retire(*oldest);
  return *oldest;
}

void GosgdStrategy::fold() {
  for (std::size_t k = 0; k < dim_; ++k) {
    x_[k] += inbox_[k];
    inbox_[k] = 0;
  }
  w_ += inbox_[dim_];
  inbox_[dim_] = 0;
}

void GosgdStrategy::write_model(std::span<float> params) const {
  for (std::size_t k = 0; k < dim_; ++k) params[k] = static_cast<float>(x_[k] / w_);
}

StepOutcome GosgdStrategy::step(const StepInput& input) {
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_, "gosgd: step() after finish()");
  const std::span<float> params = input.state.params;
  FAST_ENFORCE_EQ(params.size(), dim_, "gosgd: the parameter count changed since construction");
  runtime::Context& ctx = comm_.context();
  const int rank = comm_.rank();
  StepOutcome outcome;
  release_applied();
  outcome.applied = apply_update(input, options_.non_finite);

  const double t0 = ctx.now();
  int peer = -1;
  if (gossips(options_.gossip_probability, options_.seed, rank, input.step)) {
    // Lost out-neighbours are left out of the draw (the same draw as pick_peer when none is).
    const std::vector<int> live = alive_only(schedule_.out_neighbors(rank, input.step), ctx);
    if (!live.empty()) peer = live[gossip_draw(options_.seed, kGosgdPeerSalt, rank, input.step).below(live.size())];
  }
  Slot* slot = peer >= 0 ? &free_slot() : nullptr;
  {
    collective::Window::Local local = window_->local();
    // GoSGD's local step: z_i moves by the optimizer's step, so x_i by w_i times it. z_i before
    // the step is what write_model left in params, x_i / w_i rounded to f32, formed again here
    // instead of kept (x_i and w_i change only in this activity's steps).
    // x moves to a fresh buffer when its own was pushed and may still travel (the new x written
    // from the old, which stays as sent).
    const std::span<const double> old = writable_numerator(/*copy=*/!outcome.applied);
    if (outcome.applied)
      for (std::size_t k = 0; k < dim_; ++k)
        x_[k] = old[k] + w_ * (static_cast<double>(params[k]) - static_cast<double>(static_cast<float>(old[k] / w_)));
    fold();
    if (slot != nullptr && w_ >= kMinPushMass) {
      // [x part | mass | applied counts]: the counts are 1 for this worker, 0 for the others.
      // Without a codec that is x's own buffer, halved: the slot takes it, x_ keeps viewing it.
      if (codec_) {
        slot->payload = core::Buffer::pooled(core::DType::f64);
        slot->payload.resize_to_overwrite(inbox_.size(), core::DType::f64);
        const std::span<double> payload = slot->payload.as<double>();
        for (std::size_t k = 0; k < dim_; ++k)  // the model z = x / w, scaled at the peer by the mass sent
          payload[k] = (x_[k] *= 0.5) / (0.5 * w_);
      } else {
        for (std::size_t k = 0; k < dim_; ++k) x_[k] *= 0.5;
        slot->payload = std::move(numerator_);
      }
      const std::span<double> payload = slot->payload.as<double>();
      const std::span<double> counts = payload.subspan(dim_ + 1);
      std::fill(counts.begin(), counts.end(), 0.0);
      counts[static_cast<std::size_t>(rank)] = 1.0;
      w_ *= 0.5;
      payload[dim_] = w_;
      slot->push = {.peer = peer, .seq = pushed_to_[static_cast<std::size_t>(peer)]++, .mass = w_};
      slot->busy = true;
      slot->order = pushes_++;
      slot->issued = t0;
    } else {
      slot = nullptr;
    }
    write_model(params);
  }
  if (slot != nullptr) {
    try {
      const std::span<const double> payload = std::as_const(slot->payload).as<double>();
      if (codec_) {
        // With a codec the model z travels as a state (the codec's encoding of its difference from
        // what this peer last reconstructed of it, so what a codec drops now is sent later) and the
        // peer adds mass x its reconstruction z^, with the mass in the same atomic step (scale_at =
        // dim_); the push counter follows exact. Mass is conserved exactly; the sum of x loses
        // mass x (z^ - z), the reconstruction's lag, which vanishes as the model settles. (Keeping
        // that lag at the sender instead, to conserve x exactly, made push-sum unstable with
        // sparse codecs: the sender's model then overshoots by the lag at every push.)
        core::Work model = window_->accumulate_scaled(peer, core::ConstView(payload.first(dim_)), slot->push.mass, 0,
                                                      static_cast<std::int64_t>(dim_));
        core::Work mass =
            window_->accumulate(peer, core::ConstView(payload.subspan(dim_ + 1)), dim_ + 1, collective::Wire::exact);
        slot->work = core::Work::all({model, mass});
      } else {
        slot->work = window_->accumulate(peer, core::ConstView(payload));
      }
    } catch (const core::PeerLost&) {
      // The peer was lost after the draw (on a real clock a loss can land between the two): the
      // mass and numerator this push carried are lost with it, as when it is lost after receiving.
      if (!runtime::lost_since(ctx, peer, t0)) throw;
      slot->work = core::Work();
    }
  }
  outcome.comm_seconds = ctx.now() - t0;
  return outcome;
}

void GosgdStrategy::finish(ModelState state) {
  if (finished_) return;
  finished_ = true;
  // Every push applied, every buffer back in the pool before the final evaluation's take their place.
  for (Slot& slot : slots_)
    if (slot.busy) retire(slot);
  // Returns once every worker got here, i.e. once every push of every worker was applied.
  window_->close();
  FAST_ENFORCE_EQ(state.params.size(), dim_, "gosgd: the parameter count changed since construction");
  collective::Window::Local local = window_->local();
  fold();
  write_model(state.params);
}

void GosgdStrategy::save_state(Checkpoint& out) {
  // During the run (a periodic checkpoint, between two of this worker's steps): the numerator and
  // mass as this worker holds them; mass pushed to it and not yet folded is not in the file (a
  // resumed run's masses then sum to less than the workers: each model x / w is unchanged).
  FAST_ENFORCE_AS(core::InvalidUsage, finished_ || !codec_,
                  "gosgd: save_state() before finish() with compress = '{}' (the links' references change with "
                  "every push: the checkpoint is taken once every push has landed)",
                  options_.compress);
  collective::Window::Local local = window_->local();
  out.doubles.insert_or_assign("gosgd.numerator", std::vector<double>(x_.begin(), x_.end()));
  out.doubles.insert_or_assign("gosgd.mass", std::vector<double>{w_});
  window_->save_links("gosgd.window", out);  // with a codec: its links' references
}

void GosgdStrategy::restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "gosgd: restore_state() must come after attach() and before finish()");
  const std::vector<double>& x = checkpoint.double_array("gosgd.numerator", dim_, source);
  const double w = checkpoint.double_array("gosgd.mass", 1, source)[0];
  if (!(w > 0 && std::isfinite(w)))
    FAST_THROW(core::IoError, "checkpoint '{}': gosgd.mass is {}, expected a finite number > 0", source, w);
  window_->restore_links("gosgd.window", checkpoint, source);
  collective::Window::Local local = window_->local();
  (void)writable_numerator(/*copy=*/false);
  std::copy(x.begin(), x.end(), x_.begin());
  w_ = w;
  write_model(state.params);
}

void GosgdStrategy::rejoin(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "gosgd: rejoin() before attach() or after finish()");
  FAST_ENFORCE_AS(core::InvalidUsage, !codec_, "gosgd: rejoin with compress = '{}': {}", options_.compress,
                  "the links' codec references would not match the peers'");
  FAST_ENFORCE_EQ(state.params.size(), dim_, "gosgd: the parameter count changed since construction");
  collective::Window::Local local = window_->local();
  (void)writable_numerator(/*copy=*/false);
  std::copy(state.params.begin(), state.params.end(), x_.begin());
  w_ = 1.0;
  fold();
  write_model(state.params);
}

void GosgdStrategy::representative(ModelState /*state*/, std::span<float> out) {
  FAST_ENFORCE_AS(core::InvalidUsage, finished_, "gosgd: representative() before finish()");
  FAST_ENFORCE_EQ(out.size(), dim_, "representative: output length must equal the parameter count");
  // The sums are formed in the inbox's first dim + 1 elements: after finish() the window is closed
  // and the inbox folded (all zeros there), so no worker holds another model-sized buffer for them.
  // They are zeroed again after, also when the all-reduce fails.
  const std::span<double> sums = std::span<double>(inbox_).first(dim_ + 1);
  struct Zeroed {
    std::span<double> v;
    ~Zeroed() { std::fill(v.begin(), v.end(), 0.0); }
  } zeroed{sums};
  std::copy(x_.begin(), x_.end(), sums.begin());
  sums[dim_] = w_;
  comm_.allreduce(core::MutableView(sums));
  for (std::size_t k = 0; k < dim_; ++k) out[k] = static_cast<float>(sums[k] / sums[dim_]);
}

collective::Window::Local GosgdStrategy::hold_mass(MassView& out) {
  collective::Window::Local local = window_->local();
  out.weight = w_;
  out.inbox = inbox_[dim_];
  out.applied.assign(inbox_.begin() + static_cast<std::ptrdiff_t>(dim_ + 1), inbox_.end());
  out.pending.clear();
  for (const Slot& slot : slots_)
    if (slot.busy) out.pending.push_back(slot.push);
  return local;
}

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::gosgd_registration() {
  return {.name = "gosgd",
          .summary = "push-sum gossip",
          .make = factory_of<GosgdStrategy>(),
          .options = {StrategyOption::field("gossip_probability", &StrategyOptions::gossip_probability,
                                            "probability that a step pushes half its mass to a peer.")
                          .greater_than(0)
                          .at_most(1),
                      topology_option()},
          .check = &GosgdStrategy::check_options,
          .asynchronous = true,
          .rejoin = &rejoin_without_codec,
          .save_during_run = &save_during_run_without_codec};
}

}  // namespace fast::strategy
