#pragma once
// Strategy `dpsgd`: decentralized parallel SGD, synchronous gossip (Lian et al., NeurIPS 2017;
// paper 002 Fig. 15). Workers sit on an undirected topology with Metropolis-Hastings mixing
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

#include <vector>

#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

class DpsgdStrategy final : public Strategy {
 public:
  // InvalidArgument when the topology is unknown, directed, or disconnected.
  DpsgdStrategy(const StrategyOptions& options, collective::Communicator& comm);
  std::string_view name() const override { return "dpsgd"; }
  StepOutcome step(const StepInput& input) override;

  double self_weight() const noexcept { return self_weight_; }
  const std::vector<int>& neighbors() const noexcept { return neighbors_; }

 private:
  StrategyOptions options_;
  std::vector<int> neighbors_;
  std::vector<double> weights_;
  double self_weight_ = 1.0;
};

}  // namespace fast::strategy
