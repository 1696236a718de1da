#pragma once
// Strategy `easgd`: asynchronous Elastic Averaging SGD (Zhang, Choromanska, LeCun, "Deep learning
// with Elastic Averaging SGD", NeurIPS 2015, Algorithm 1; the taxonomy Eq. 1 and Fig. 10). A centre
// variable x~ lives on rank 0, exposed in a one-sided window ("easgd.centre"); every worker i runs
// its own optimizer on its replica x_i and, every `tau` of its own steps, exchanges with the
// centre through that window (a get, then an accumulate), so no worker ever waits for rank 0's
// training loop (rank 0's window service answers while it computes):
//
//   x_i <- optimizer(x_i, g_i, lr)                       every step, locally
//   when (t_i + 1) mod tau == 0:                         t_i = this worker's step index
//     x~_read <- x~                                      (window get from rank 0)
//     d       <- alpha * (x_i - x~_read)
//     x_i     <- x_i - d                                 (the worker moves towards the centre)
//     x~      <- x~ + d                                  (window accumulate: the centre moves
//                                                         towards the worker, by the same d)
//
// The elastic force is symmetric (the taxonomy: "alpha = beta in this particular implementation"),
// so every exchange conserves x_i + x~, hence sum_i x_i + x~, exactly up to float rounding,
// whatever the interleaving: the accumulate adds d to the centre as it is then, even if other
// workers moved it since the get. Rank 0 exchanges with its own centre under the window's Local
// guard (the same arithmetic, without messages).
//
// Moving rate beta = p * alpha. In the synchronous EASGD of the paper, with p workers, the centre
// moves by alpha * sum_i (x_i - x~) = beta * (mean_i x_i - x~) per round, beta = p * alpha (the
// paper's experiments use beta = 0.9, i.e. alpha = 0.9 / p); asynchronously, every worker
// exchanging once per tau of its steps gives the centre the same aggregate pull per tau steps when
// the workers run at equal speed. alpha must lie in (0, 1): alpha = 0 disables the coupling and
// alpha >= 1 moves the worker onto or past the centre. tau >= 1: larger tau = less communication
// and more exploration, at the price of replicas drifting further apart (the taxonomy sec. 3.3.5).
//
// Initial centre: the average of the workers' initial replicas (one all-reduce in attach()).
// Representative model: the centre. snapshot() reads it (window get, not collective);
// representative() (collective) broadcasts rank 0's centre to every worker; finish() closes the
// window collectively and leaves each worker's params at its own x_i. The order of a step is local
// update, then (every tau steps) the exchange, so the next gradient is computed at the elastically
// moved replica, as in the paper's Algorithm 1. Non-finite gradients: the local update follows
// options.non_finite (apply_update); the exchange still happens, so nobody is left waiting.
// Communication: every tau steps a worker receives and sends |x| floats to rank 0; rank 0 serves
// p / tau exchanges per step of the others (the taxonomy sec. 3.3.5: scale tau with p).
// Options: `alpha` (default 0.1), `tau` (default 4).
// With compress (docs/compression.md): reads of the centre travel as states (differences from a
// reference), the elastic difference added to it through error feedback; the replicas first start
// from worker 0's model so the references agree.
//
// On a lost peer: a lost worker other than the centre's host just stops exchanging (the centre's
// service drops its unfinished request; its replica is gone); the others go on. The centre's host
// is worker 0 at the start. Without a codec every worker keeps a copy of the centre in its own
// slot of the window: after each exchange, the centre as it read it plus its own d, written only
// while nobody else wrote to that slot. When the host is lost, each worker whose window operation
// fails on it moves to the lowest worker above it that is live and was never lost
// (runtime::successor), whose copy is the centre from then on: what the centre received after
// that worker's last exchange is lost with the old host (docs/faults.md). An accumulate that failed
// on the lost host is sent to the new one. A worker that takes a rank back reads the centre from
// the live worker whose slot was written most (the host's counts every exchange, a copy's none),
// and representative() broadcasts from the member whose slot was written most. With a codec only
// worker 0 holds the centre, and its loss ends the run: the next exchange, snapshot or finish
// throws PeerLost ("the centre's host (worker 0) was lost").

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fast/collective/window.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

class EasgdStrategy final : public Strategy {
 public:
  // InvalidArgument when alpha is not in (0, 1) or tau < 1.
  EasgdStrategy(const StrategyOptions& options, collective::Communicator& comm);
  ~EasgdStrategy() override;
  std::string_view name() const override { return "easgd"; }
  void attach(ModelState state) override;
  StepOutcome step(const StepInput& input) override;
  // Collective: out = the centre (rank 0's, broadcast). Valid before and after finish().
  void representative(ModelState state, std::span<float> out) override;
  // Checkpoints (taken after finish(), docs/faults.md): worker 0 saves the centre ("easgd.centre"); the
  // others, nothing. restore_state: after attach(),
  // before the first step; IoError naming `source` for a missing or malformed value.
  void save_state(Checkpoint& out) override;
  void restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) override;
  // A worker taking a lost rank back into the run (docs/faults.md, "Elastic asynchronous runs"):
  // its replica and its copy become the centre as read now from its host. Without a codec only.
  void rejoin(ModelState state) override;
  bool asynchronous() const override { return true; }
  // The centre (worker 0; without a codec every worker's copy of it) and, with a codec, the common
  // initial model.
  std::size_t state_bytes() const override { return bytes_of(centre_) + bytes_of(start_); }
  // Collective: closes the centre window (every exchange of every worker has landed).
  void finish(ModelState state) override;
  // Not collective: out = the centre as its host's window holds it now.
  bool snapshot(ModelState state, std::span<float> out) override;

  // Elastic exchanges this worker has made.
  std::int64_t exchanges() const noexcept { return exchanges_; }

 private:
  // One elastic exchange of params with the centre.
  void exchange(std::span<float> params);
  // Runs fn (window operations on the centre's host); when the host is lost, moves the centre
  // (move_centre) and runs fn again. PeerLost naming `what` without copies, or when no live worker
  // is left to hold the centre.
  template <typename Fn>
  void with_centre(const char* what, Fn&& fn);
  // host_ was lost: the next live worker above it that was never lost holds the centre.
  void move_centre(const std::string& why);
  // After an exchange with the host: this worker's copy of the centre = read_ + diff_, while
  // nobody wrote to it (its window version is 0).
  void keep_copy();
  // Whether every worker keeps a copy of the centre: without a codec.
  bool copies() const { return !compresses(options_); }

  StrategyOptions options_;
  std::vector<float> centre_;  // the host: x~ (exposed); the others: a copy of it (exposed), or empty with a codec
  std::vector<float> read_;    // scratch: the centre as read
  std::vector<float> diff_;    // scratch: d = alpha * (x_i - x~)
  collective::WindowOptions with_start(collective::WindowOptions options) const;
  core::Layout layout_;       // the model's, for the window's codec
  std::vector<float> start_;  // with a codec: the common initial model
  std::unique_ptr<collective::Window> window_;
  bool finished_ = false;
  std::int64_t exchanges_ = 0;
  int host_ = 0;                     // the worker whose exposed tensor is the centre, as this worker knows it
  std::uint64_t final_version_ = 0;  // this worker's window version when finish() closed it
};

}  // namespace fast::strategy
