#pragma once
// Strategy `adpsgd`: asynchronous decentralized parallel SGD (Lian, Zhang, Zhang, Liu,
// "Asynchronous Decentralized Parallel Stochastic Gradient Descent", ICML 2018). Workers sit on an
// undirected, connected topology and never wait for each other's steps. Each step of worker i,
// with g_i computed at the model x_i it read at the end of its previous step:
//
//   j   <- a uniformly random neighbour of i   (seeded: a function of seed, rank and step only)
//   x_i, x_j <- (x_i + x_j) / 2                (pairwise average, one-sided, see below)
//   x_i <- optimizer(x_i, g_i, lr)             (local update; g_i may be stale by the averages
//                                               that reached x_i since it was read)
//
// One-sided averaging. Each worker's model lives in a Window ("adpsgd.params", f32, the length
// of the parameters) that its peers change through the owner's window service; the replica the
// trainer sees (state.params) is a copy refreshed at the end of every step. Worker i snapshots
// s = x_i (under its Local guard), asks j for Window::fetch_average(s), which atomically returns
// x_j and sets x_j <- (x_j + s) / 2 at j, then adds (x_j - s) / 2 to its own x_i (under its guard).
// In exact arithmetic each exchange moves (s - x_j) / 2 from i to j and back, so the sum of the
// models is unchanged: only gradients change it. In f32 each exchange rounds each of the two
// stored results once (the window forms sums in double): the sum of the replicas changes by at
// most u (|x_i'| + |x_j'|) per coordinate and exchange, u = 2^-24.
// Averages that reach x_i while i waits for j are kept (i adds its half as an increment), so
// overlapping exchanges compose additively and conserve the sum.
//
// Deadlock freedom on any graph (odd rings, bipartite, stars): there is no pairing handshake. A
// step waits only for (a) its own Local guard, held by the window service for the time of one
// operation, and (b) one fetch_average answered by j's service activity, which runs while j
// computes, sleeps or waits, and which waits only for j's Local guard. No worker holds its guard
// while waiting for anything, so the wait-for graph has no cycle whatever the topology.
//
// Options: `topology` (topology::make_topology spec; must be undirected and connected, else
// InvalidArgument naming it), `seed` (random topologies and the neighbour choice), `non_finite`
// (a non-finite gradient skips the local update, not the averaging). asynchronous() is true:
// workers may take different numbers of steps. finish() is collective: it closes the window once
// every worker has stopped exchanging, then leaves state.params at the worker's final model.
// Representative model: the average of the final models.
// Cost per step: |x| sent and |x| received (4 bytes per parameter each way), whatever the degree.
// With compress (docs/compression.md): both halves of fetch_average travel as states (differences
// from per-link references); the replicas first start from worker 0's model.
//
// On a lost peer: neighbours the runtime reports lost (Context::alive) are left out of the draw
// (the same draw as without losses when none is), so a lost neighbour's share goes to the live
// ones; with no live neighbour the step takes no average. A fetch_average that fails with PeerLost
// because the peer was lost meanwhile leaves x_i unchanged (no average that step). The lost
// worker's model is gone with it: the representative is the average of the survivors' models.
// A worker that rejoins (zmq, docs/faults.md) starts from a copy of a live neighbour's model
// (rejoin()); from then on it is drawn again and averages as any other.

#include <cstdint>
#include <memory>
#include <vector>

#include "fast/collective/window.hpp"
#include "fast/core/long_lived.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

class AdpsgdStrategy final : public Strategy {
 public:
  // InvalidArgument when the topology is unknown, directed, or disconnected.
  AdpsgdStrategy(const StrategyOptions& options, collective::Communicator& comm);
  // The checks that a declaration cannot make (make_strategy checked every option against its
  // declaration): the topology for `workers`. `fast train` runs them before any data is read.
  // Throws InvalidArgument.
  static void check_options(const StrategyOptions& options, int workers);
  ~AdpsgdStrategy() override;
  // Collective: opens the window with the initial replica as x_i.
  void attach(ModelState state) override;
  // The averaged model x_i, exposed in "adpsgd.params" (elements [0, n)).
  // With a codec the window's reads are encoded, so the Worker publishes a dense copy instead.
  collective::Window* replica_window() override { return compresses(options_) ? nullptr : window_.get(); }
  std::string_view name() const override { return "adpsgd"; }
  StepOutcome step(const StepInput& input) override;
  bool asynchronous() const override { return true; }
  // The exposed model and, with a codec, the common initial model.
  std::size_t state_bytes() const override { return bytes_of(model_) + bytes_of(start_); }
  void finish(ModelState state) override;
  // Takes x_j of the first live neighbour (in neighbour order) as this worker's model: its window
  // and state.params. PeerLost when no neighbour is live; InvalidUsage with a codec (the links'
  // references would not match the neighbours').
  void rejoin(ModelState state) override;
  // Checkpoints (after finish()): with a codec, the window's link references ("adpsgd.window...");
  // nothing else (the model is the worker's parameters). restore_state(): the restored parameters
  // become x_i (the window's model) and the links' references come back, before the first exchange.
  void save_state(Checkpoint& out) override;
  void restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) override;
  StalenessStats staleness() const override { return staleness_; }

  // The neighbour worker `rank` averages with at `step`: neighbors[h(seed, rank, step) mod degree]
  // (h a SplitMix64 hash). -1 when the worker has no neighbour (one worker).
  static int pick_neighbor(const std::vector<int>& neighbors, std::uint64_t seed, int rank, std::int64_t step);
  const std::vector<int>& neighbors() const noexcept { return neighbors_; }

 private:
  // x_i = model (rejoin, restore_state), under the window's guard; the read version follows.
  void adopt(std::span<const float> model);
  // params = x_i, under the window's guard: after an exchange that failed partway, whose peer's
  // model was being received into params.
  void restore_params(std::span<float> params);

  StrategyOptions options_;
  std::vector<int> neighbors_;
  core::LongLivedVector<float> model_;  // x_i, exposed in window_; touched only under window_->local()
  core::Layout layout_;       // the model's, for the window's codec
  std::vector<float> start_;  // with a codec: the common initial model
  std::unique_ptr<collective::Window> window_;
  std::uint64_t read_version_ = 0;  // window version when state.params was last refreshed
  StalenessStats staleness_;
  bool finished_ = false;
};

}  // namespace fast::strategy
