#pragma once
// Strategy `gosgd`: push-sum gossip SGD (Blot, Picard, Cord, Thome, "Gossip training for deep
// learning", arXiv 1611.09726, 2016; the taxonomy Fig. 17), on the push-sum protocol of Kempe,
// Dobra, Gehrke (FOCS 2003), over directed and time-varying graphs as in SGP (Assran, Loizou,
// Ballas, Rabbat, ICML 2019). Each worker keeps a numerator x_i (f64) and a mass w_i (f64,
// starts at 1; x_i starts at w_i times the initial parameters); its model is z_i = x_i / w_i, and
// the replica the trainer sees (state.params) holds z_i. Each step of worker i, with g_i computed
// at z_i:
//
//   z_i' = optimizer(z_i, g_i, lr);  x_i <- x_i + w_i (z_i' - z_i)       (GoSGD's local step)
//   (z_i: x_i / w_i rounded to f32, what the last step left in state.params, formed again from
//   x_i and w_i rather than kept; so a change made to state.params between two steps is carried
//   into x_i by the next step, as part of z_i' - z_i)
//   (x_i, w_i) <- (x_i, w_i) + inbox_i;  inbox_i <- 0                     (fold what arrived)
//   with probability p (`gossip_probability`):
//     j <- an out-neighbour of i in the schedule's graph of round `step` (seeded choice)
//     (x_i, w_i) <- (x_i, w_i) / 2;  push (x_i, w_i) into j's inbox       (one-sided, no wait)
//   state.params <- x_i / w_i
//
// The local step moves z_i by exactly the optimizer's step whatever w_i (GoSGD's rule; SGP's
// x_i -= lr g would scale it by 1 / w_i, which explodes for a fast worker whose mass halves at
// every push). Gossip leaves sum_i x_i and sum_i w_i (plus what is in inboxes and in flight)
// unchanged, so with zero gradients every z_i tends to sum_i x_i(0) / N, the average of the
// initial models (push-sum consensus), on any schedule whose union over a window is strongly
// connected, directed or not.
//
// Messages are one-sided: a push is a Window::accumulate into the receiver's inbox window
// ("gosgd.inbox", f64: [x part | mass | pushes applied from worker 0..N-1]), answered by the
// receiver's service activity while it computes; a step never waits for another worker's step.
// At most kMaxPending pushes of a worker are in flight; a step that needs one beyond that waits
// for its oldest push to be applied (a wait on the receiver's service only). Without a codec a
// push sends x_i's own buffer, [x | mass | this worker's count], f64 from the pool of page runs
// (core::Buffer::pooled): what is pushed is x_i once halved, so the push's slot takes the buffer
// and x_i keeps reading it; the next step writes x_i into a fresh buffer while the push travels,
// and the buffer goes back to the pool once a step sees its push applied. A worker thus holds one
// model-sized buffer per push in flight besides the newest, not one per push besides x_i. With a
// codec a push sends a buffer of its own (the model z, not x). A worker whose mass fell
// below 1e-200 (about 660 pushes with nothing received) skips pushing until it receives, so x_i
// never underflows.
//
// Mass accounting: a push's mass is, at every instant, in exactly one place: the sender's w_i
// before the push, in flight (issued, not yet applied), the receiver's inbox (applied, not yet
// folded), the receiver's w_j. The inbox counts the pushes it applied from each sender; the
// sender numbers its pushes per receiver, so a push is in flight exactly when its number is at
// least the receiver's count (pushes on one link are applied in order). hold_mass() exposes this
// under the worker's lock for checks of sum w + inbox + in flight = N at consistent cuts.
//
// Options: `topology` (a topology::make_schedule spec: a static graph, directed or not, or
// exponential-peer, random-peer, random-matching, cycle:...; its union over its period, or over
// 4N rounds for random kinds, must be strongly connected), `seed` (random graphs, peer choice,
// gossip coin), `gossip_probability` (p in (0, 1], default 1), `non_finite` (a non-finite
// gradient skips the local step, not the gossip). finish() is collective: it waits for this
// worker's pushes, closes the inbox once every worker stopped pushing, folds the last arrivals
// and leaves z_i in state.params. Representative model: sum_i x_i / sum_i w_i (all-reduced), the
// push-sum average, which gossip conserves exactly.
// Cost per push: 8 (|x| + 1 + N) bytes (f64, so that the mass travels in the same atomic update
// as the parameters).
// With compress (docs/compression.md): the pushed model z travels as a state (difference from the
// peer's reconstruction) and the peer adds mass x its reconstruction, with the mass added exact in
// the same atomic step (Window::accumulate_scaled). Mass stays exactly conserved; the sum of x loses
// the reconstruction's lag, which vanishes as the model settles.
//
// On a lost peer: out-neighbours the runtime reports lost are left out of the peer draw (the same
// draw as pick_peer when none is); with no live out-neighbour the step does not push. A push whose
// receiver is lost (before or during the push) is dropped: the half of (x_i, w_i) it carried is lost,
// as is everything the lost worker held. The survivors' representative, sum x / sum w over the
// survivors, is then the push-sum average of what they still hold (no longer of the initial
// models: the conservation of sum x and sum w holds among the survivors only from the loss on).

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "fast/collective/window.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/long_lived.hpp"
#include "fast/strategy/strategy.hpp"
#include "fast/topology/schedule.hpp"

namespace fast::strategy {

class GosgdStrategy final : public Strategy {
 public:
  // Pushes of one worker that may be in flight at once.
  static constexpr std::size_t kMaxPending = 2;

  // Collective: opens the inbox window. InvalidArgument when gossip_probability is outside
  // (0, 1] or the schedule is unknown or not connected.
  GosgdStrategy(const StrategyOptions& options, collective::Communicator& comm);
  // The checks that a declaration cannot make (make_strategy checked every option against its
  // declaration): the topology for `workers`. `fast train` runs them before any data is read.
  // Throws InvalidArgument.
  static void check_options(const StrategyOptions& options, int workers);
  ~GosgdStrategy() override;
  // Collective: x_i = the initial replica, w_i = 1; opens the inbox window.
  void attach(ModelState state) override;
  std::string_view name() const override { return "gosgd"; }
  StepOutcome step(const StepInput& input) override;
  bool asynchronous() const override { return true; }
  // x's buffer (x, its mass and counts once pushed), the exposed inbox (x part, mass, counts), the pushes issued per
  // receiver and, with a codec, the common initial model. The payloads of pushes in flight are not state.
  std::size_t state_bytes() const override {
    return numerator_elements() * sizeof(double) + bytes_of(inbox_) + bytes_of(pushed_to_) + bytes_of(start_);
  }
  void finish(ModelState state) override;
  // Checkpoints (taken after finish(), docs/faults.md): the numerator x ("gosgd.numerator", float64) and
  // the mass w ("gosgd.mass"); the restored model is x / w. restore_state: after attach(),
  // before the first step; IoError naming `source` for a missing or malformed value.
  void save_state(Checkpoint& out) override;
  void restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) override;
  // A worker taking a lost rank back into the run (docs/faults.md, "Elastic asynchronous runs"):
  // state.params holds a live peer's replica (Worker::rejoin); x = that model, w = 1, the mass
  // every worker starts with (the lost worker's mass went with it; pushes that reached this
  // worker's inbox meanwhile are kept, they are mass its peers gave away). Without a codec only.
  void rejoin(ModelState state) override;
  bool rejoins_from_published_replica() const override { return true; }
  // Collective, after finish(): out = sum_i x_i / sum_i w_i.
  void representative(ModelState state, std::span<float> out) override;

  struct PendingPush {
    int peer = -1;          // receiver
    std::uint64_t seq = 0;  // number of this push among this worker's pushes to peer (0-based)
    double mass = 0;        // w carried
  };
  struct MassView {
    double weight = 0;                 // w_i
    double inbox = 0;                  // mass applied to the inbox, not yet folded into w_i
    std::vector<double> applied;       // applied[s]: pushes from worker s applied to the inbox
    std::vector<PendingPush> pending;  // pushes issued and not yet seen completed
  };
  // Reads this worker's mass state into out and returns the guard of its window: until the guard
  // is released, nothing changes that state (pushes to this worker wait, and so does its step).
  // A checker that holds every worker's guard at once (taken in rank order) sees a consistent
  // cut. Thread-safe; for tests and diagnostics.
  collective::Window::Local hold_mass(MassView& out);

  double weight() const noexcept { return w_; }  // w_i; main activity only
  // The peer worker `rank` pushes to at `step` when it gossips: a seeded choice among
  // out_neighbors(rank, step) of the schedule; -1 when it has none.
  static int pick_peer(const topology::TopologySchedule& schedule, std::uint64_t seed, int rank, std::int64_t step);
  // Whether worker `rank` gossips at `step` (a seeded Bernoulli(p) draw; always when p = 1).
  static bool gossips(double p, std::uint64_t seed, int rank, std::int64_t step);

 private:
  struct Slot {
    core::Buffer payload;  // f64, from the pool while its push travels: x's buffer of its step, or the codec's z
    core::Work work;
    PendingPush push;
    std::uint64_t order = 0;  // this worker's push count when it was issued
    double issued = 0;        // when it was issued (Context::now), to tell a loss of the receiver since
    bool busy = false;
  };
  void retire(Slot& slot);     // waits for its push, frees it, its buffer back to the pool (or to x)
  void release_applied();      // retires the slots whose push was seen applied (no wait)
  Slot& free_slot();           // a slot for the next push (no buffer yet); may wait for a push
  void wait_push(Slot& slot);  // waits for a push to be applied; a lost receiver's push is dropped
  void fold();                                      // inbox into (x, w); under the guard
  // [x | mass | counts]: the length of x's buffer.
  std::size_t numerator_elements() const noexcept { return dim_ == 0 ? 0 : inbox_.size(); }
  // x made writable: stays where it is when numerator_ holds it, else (a push in flight sends its
  // buffer) moves to a fresh buffer from the pool, a copy when copy, else left for the caller to
  // write in full. Returns the old x (read-only: the push still reads it) and sets x_ to the new.
  std::span<const double> writable_numerator(bool copy);
  void write_model(std::span<float> params) const;  // params = x / w; under the guard

  StrategyOptions options_;
  topology::TopologySchedule schedule_;
  std::size_t dim_ = 0;
  // The numerator x_i: the first dim elements of its buffer, held by numerator_ or, once pushed,
  // by the newest push's slot until the next step moves x (writable_numerator); changed under the
  // window guard.
  core::Buffer numerator_;
  std::span<double> x_;
  double w_ = 1.0;             // mass; changed under the window guard
  core::LongLivedVector<double> inbox_;  // exposed: [x part (dim) | mass | applied counts (N)]
  bool codec_ = false;         // compress is not "none": pushes use accumulate_scaled
  std::vector<float> start_;   // with a codec: the common initial model
  core::Layout layout_;        // the model's, for the window's codec (its blocks lie in the x part)
  std::unique_ptr<collective::Window> window_;
  std::vector<Slot> slots_;               // slot fields change under the window guard
  std::vector<std::uint64_t> pushed_to_;  // pushes issued per receiver
  std::uint64_t pushes_ = 0;              // pushes issued
  bool finished_ = false;
};

}  // namespace fast::strategy
