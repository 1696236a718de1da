#include "fast/strategy/dpsgd.hpp"
#include "builtin.hpp"

#include "fast/core/error.hpp"
#include "fast/core/saved_state.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/mixing.hpp"

namespace fast::strategy {

namespace {
// The graph of `options.topology` on n workers, checked for dpsgd.
topology::Graph dpsgd_graph(const StrategyOptions& options, int n) {
  return topology::make_undirected_connected(options.topology, n, options.seed, "dpsgd",
                                             "dpsgd needs an undirected one (its mixing must be doubly stochastic)");
}
}  // namespace

// The whole mixing matrix is built and checked once, here (before a run); each worker computes
// only its own row.
void DpsgdStrategy::check_options(const StrategyOptions& options, int workers) {
  topology::check_doubly_stochastic(topology::metropolis_hastings(dpsgd_graph(options, workers)), 1e-12);
}

DpsgdStrategy::DpsgdStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {
  const int me = comm.rank();
  const topology::Graph graph = dpsgd_graph(options, comm.size());
  neighbors_ = graph.neighbors_in(me);
  topology::MixingRow row = topology::metropolis_hastings_row(graph, me, neighbors_);
  weights_ = std::move(row.neighbors);
  self_weight_ = row.self;
}

namespace {

// The graph of the group an elastic run regrouped into after a loss. A topology of fixed sizes
// (hypercube, torus2d:RxC) may not fit it: the run then ends with an Error (exit code 5) that says
// so, not with the graph's InvalidArgument, which reads as bad input given before the run.
topology::Graph regrouped_graph(const StrategyOptions& options, int group) {
  try {
    return dpsgd_graph(options, group);
  } catch (const core::InvalidArgument& e) {
    FAST_THROW(core::Error,
               "dpsgd: the {} workers left after a loss cannot regroup on their topology: {}; an elastic dpsgd run "
               "needs a topology that fits every group size it may shrink to (ring, complete, exponential, ...)",
               group, e.what());
  }
}

}  // namespace

void DpsgdStrategy::regrouped(ModelState /*state*/) {
  const std::vector<int>& members = comm_.members();
  const topology::Graph graph = regrouped_graph(options_, comm_.group_size());
  const int me = comm_.group_index();
  const std::vector<int> near = graph.neighbors_in(me);
  topology::MixingRow row = topology::metropolis_hastings_row(graph, me, near);
  neighbors_.clear();
  for (int i : near) neighbors_.push_back(members[static_cast<std::size_t>(i)]);
  weights_ = std::move(row.neighbors);
  self_weight_ = row.self;
}

void DpsgdStrategy::attach(ModelState state) {
  if (!compresses(options_)) return;
  layout_.assign(state.layout.begin(), state.layout.end());
  const std::vector<float> start = common_start(state);
  const double gamma =
      options_.consensus_step > 0 ? options_.consensus_step : default_consensus_step(options_.compress);
  choco_ = std::make_unique<collective::ChocoGossip>(
      comm_, state.params.size(), neighbors_, weights_, neighbors_, self_weight_,
      collective::ChocoOptions{.codec = options_.compress,
                               .seed = options_.seed,
                               .gamma = gamma,
                               .layout = layout_.empty() ? nullptr : &layout_,
                               .meter = &meter_,
                               .initial = start});
}

void DpsgdStrategy::save_state(Checkpoint& out) {
  if (choco_) choco_->save("dpsgd.choco", out);
}

void DpsgdStrategy::restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState /*state*/) {
  if (choco_) choco_->restore("dpsgd.choco", checkpoint, source);
}

StepOutcome DpsgdStrategy::step(const StepInput& input) {
  runtime::Context& ctx = comm_.context();
  StepOutcome outcome;
  // Every worker takes part in the exchange whatever its gradient, so nobody waits forever; a
  // worker with a non-finite gradient only skips (or, with non_finite = error, fails) its own
  // local update, after the exchange.
  // Without a codec the gossip's sum goes into the gradient's storage where the optimizer can take
  // the gradient first: no model-sized buffer per worker beside its state (under sim, thousands).
  const TakenGradient taken = choco_ ? TakenGradient{} : take_gradient_first(input);
  const double t0 = ctx.now();
  if (choco_)
    choco_->mix(input.state.params);
  else
    comm_.neighbor_average(core::MutableView(input.state.params), neighbors_, weights_, neighbors_, self_weight_,
                           taken.scratch);
  outcome.comm_seconds = ctx.now() - t0;
  outcome.applied = finish_update(input, taken, options_.non_finite);
  return outcome;
}

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::dpsgd_registration() {
  return {.name = "dpsgd",
          .summary = "synchronous gossip",
          .make = factory_of<DpsgdStrategy>(),
          .options = {topology_option(), consensus_step_option()},
          .check = &DpsgdStrategy::check_options,
          .elastic = [](const StrategyOptions& o) -> std::string {
            if (Strategy::compresses(o))
              return fmt::format("compress = '{}' keeps CHOCO-gossip references per link of the whole world",
                                 o.compress);
            return {};
          },
          .elastic_group = [](const StrategyOptions& o, int group) -> std::string {
            try {
              (void)dpsgd_graph(o, group);
              return {};
            } catch (const core::Error& e) {  // a file: topology may also fail to be read
              return core::user_message(e);
            }
          }};
}

}  // namespace fast::strategy
