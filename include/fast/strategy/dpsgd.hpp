#pragma once
// Strategy `dpsgd`: decentralized parallel SGD, synchronous gossip (Lian et al., NeurIPS 2017;
// the taxonomy Fig. 15). Workers sit on an undirected topology with Metropolis-Hastings mixing
// weights W (symmetric, doubly stochastic). Each step, with g_i computed at x_i:
//
//   x_i <- sum_j W_ij x_j                  (neighbour averaging: one exchange per edge)
//   x_i <- optimizer(x_i, g_i, lr)         (local update)
//
// Because W is doubly stochastic, the mixing keeps the average of the replicas exactly (up to
// float rounding); the replicas contract towards it at the rate of W's spectral gap. Each worker
// sends its parameters to its d neighbours per step (d x |x| bytes), whatever the world size: no
// global collective, so it scales with the degree, not W. Representative model: the average.
// Options: `topology` (topology::make_topology spec; must be undirected and connected), `seed`.
// With compress: the averaging is CHOCO-gossip (collective::ChocoGossip): each worker sends the
// codec's encoding of x_i - x^_i, its neighbours' copy of it, and mixes the copies with step
// `consensus_step` (gamma; 0 picks default_consensus_step(codec)). The sum of the replicas is
// still kept; the average, not each replica, is what the codec's error delays.
//
// On a lost peer: every step's neighbour exchange waits for every neighbour (synchronous), so the
// run cannot go on; the launcher ends it at once with the lost worker's PeerLost.

#include <memory>
#include <string>
#include <vector>

#include "fast/collective/choco_gossip.hpp"

#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

class DpsgdStrategy final : public Strategy {
 public:
  // InvalidArgument when the topology is unknown, directed, or disconnected.
  DpsgdStrategy(const StrategyOptions& options, collective::Communicator& comm);
  // The checks that a declaration cannot make (make_strategy checked every option against its
  // declaration): the topology for `workers`. `fast train` runs them before any data is read.
  // Throws InvalidArgument.
  static void check_options(const StrategyOptions& options, int workers);
  // Elastic: the graph of `topology` built again on the members (their indices in rank order) and
  // this member's row of its Metropolis-Hastings weights, mapped back to ranks.
  void regrouped(ModelState state) override;
  std::string_view name() const override { return "dpsgd"; }
  StepOutcome step(const StepInput& input) override;

  // With a codec: the CHOCO exchange, sized from the model.
  void attach(ModelState state) override;
  // Checkpoints with a codec: CHOCO's public copies and codec state ("dpsgd.choco..."); nothing
  // without one. restore_state: after attach(), before the first step.
  void save_state(Checkpoint& out) override;
  void restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) override;
  double self_weight() const noexcept { return self_weight_; }
  const std::vector<int>& neighbors() const noexcept { return neighbors_; }

 private:
  StrategyOptions options_;
  std::vector<int> neighbors_;
  std::vector<double> weights_;
  double self_weight_ = 1.0;
  std::unique_ptr<collective::ChocoGossip> choco_;  // with a codec
  core::Layout layout_;
};

}  // namespace fast::strategy
