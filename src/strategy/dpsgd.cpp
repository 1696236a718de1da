#include "fast/strategy/dpsgd.hpp"

#include "fast/core/error.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/mixing.hpp"

namespace fast::strategy {

DpsgdStrategy::DpsgdStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {
  const int n = comm.size();
  const int me = comm.rank();
  const topology::Graph graph = topology::make_topology(options.topology, n, options.seed);
  FAST_ENFORCE(graph.is_symmetric(),
               "dpsgd: topology '{}' is directed; dpsgd needs an undirected one (its mixing must be doubly "
               "stochastic)",
               options.topology);
  topology::check_connected(graph);
  const topology::MixingMatrix w = topology::metropolis_hastings(graph);
  topology::check_doubly_stochastic(w, 1e-12);
  neighbors_ = graph.neighbors_in(me);
  for (int j : neighbors_) weights_.push_back(w.w(me, j));
  self_weight_ = w.w(me, me);
}

StepOutcome DpsgdStrategy::step(const StepInput& input) {
  runtime::Context& ctx = comm_.context();
  StepOutcome outcome;
  // Every worker takes part in the exchange whatever its gradient, so nobody waits forever; a
  // worker with a non-finite gradient only skips (or, with non_finite = error, fails) its own
  // local update, after the exchange.
  const double t0 = ctx.now();
  comm_.neighbor_average(core::MutableView(input.state.params), neighbors_, weights_, neighbors_, self_weight_);
  outcome.comm_seconds = ctx.now() - t0;
  outcome.applied = apply_update(input, options_.non_finite);
  return outcome;
}

}  // namespace fast::strategy
