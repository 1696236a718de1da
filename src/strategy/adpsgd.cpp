#include "fast/strategy/adpsgd.hpp"
#include "builtin.hpp"

#include <algorithm>

#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/topology/builders.hpp"
#include "gossip.hpp"

namespace fast::strategy {

namespace {
topology::Graph adpsgd_graph(const StrategyOptions& options, int n) {
  return topology::make_undirected_connected(
      options.topology, n, options.seed, "adpsgd",
      "adpsgd averages pairwise over undirected edges (use gosgd for directed graphs)");
}
}  // namespace

void AdpsgdStrategy::check_options(const StrategyOptions& options, int workers) {
  (void)adpsgd_graph(options, workers);
}

AdpsgdStrategy::AdpsgdStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {
  neighbors_ = adpsgd_graph(options, comm.size()).neighbors_out(comm.rank());
}

void AdpsgdStrategy::attach(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ == nullptr, "adpsgd: attach() called twice");
  if (compresses(options_)) start_ = common_start(state);
  model_.assign(state.params.begin(), state.params.end());
  layout_.assign(state.layout.begin(), state.layout.end());
  collective::WindowOptions window_options = codec_window(options_, layout_.empty() ? nullptr : &layout_);
  window_options.initial = [this](int) { return std::span<const float>(start_); };  // every replica starts there
  window_ = std::make_unique<collective::Window>(comm_, "adpsgd.params", core::MutableView(std::span<float>(model_)),
                                                 std::move(window_options));
}

AdpsgdStrategy::~AdpsgdStrategy() = default;

int AdpsgdStrategy::pick_neighbor(const std::vector<int>& neighbors, std::uint64_t seed, int rank, std::int64_t step) {
  if (neighbors.empty()) return -1;
  return neighbors[gossip_draw(seed, kAdpsgdPeerSalt, rank, step).below(neighbors.size())];
}

StepOutcome AdpsgdStrategy::step(const StepInput& input) {
  FAST_ENFORCE_AS(core::InvalidUsage, !finished_, "adpsgd: step() after finish()");
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr, "adpsgd: step() before attach()");
  const std::span<float> params = input.state.params;
  FAST_ENFORCE_EQ(params.size(), model_.size(), "adpsgd: the parameter count changed since construction");
  runtime::Context& ctx = comm_.context();
  // Memory this step streams itself (Context::memory_traffic; the optimizer's step is part of the
  // worker's compute): the copy sent, the average (x, x_j, s read, x written), the copies to
  // and from the parameters.
  const double model_bytes = static_cast<double>(model_.size() * sizeof(float));
  StepOutcome outcome;
  const double t0 = ctx.now();
  // Lost neighbours are left out of the draw (the same draw as without losses when none is).
  const std::vector<int> live = alive_only(neighbors_, ctx);
  int peer = pick_neighbor(live, options_.seed, comm_.rank(), input.step);
  // The peer's model is received into the parameters' storage: what it holds (the model the
  // gradient was computed on) is not read again, and the step ends by writing the model there.
  // The snapshot sent goes into the gradient's storage where the optimizer takes the gradient
  // first; otherwise into a buffer of this exchange, from the pool of page runs
  // (core::Buffer::pooled), so only the workers in an exchange hold one.
  const TakenGradient taken = peer >= 0 ? take_gradient_first(input) : TakenGradient{};
  core::Buffer sent_buffer = core::Buffer::pooled(core::DType::f32);
  if (peer >= 0 && taken.scratch.empty()) sent_buffer.resize_to_overwrite(model_.size(), core::DType::f32);
  const std::span<float> sent = taken.scratch.empty() ? sent_buffer.as<float>() : taken.scratch;
  const std::span<float> got = params;
  if (peer >= 0) {
    {
      collective::Window::Local local = window_->local();
      std::copy(model_.begin(), model_.end(), sent.begin());
      ctx.memory_traffic(2.0 * model_bytes);
    }
    // Waits for the peer's window service only (never for the peer's step), holding no guard.
    const core::ConstView mine{std::span<const float>(sent)};
    try {
      window_->fetch_average(peer, mine, core::MutableView(got)).wait();
    } catch (const core::PeerLost&) {
      if (!runtime::lost_since(ctx, peer, t0)) {
        restore_params(params);
        throw;
      }
      peer = -1;  // the peer was lost during the exchange: no average this step
    } catch (...) {
      restore_params(params);
      throw;
    }
  }
  outcome.comm_seconds = ctx.now() - t0;

  collective::Window::Local local = window_->local();
  if (peer >= 0) {
    // x_i += (x_j - s) / 2: the other half of the average, as an increment, so averages that
    // reached x_i meanwhile are kept. Formed in double, rounded once.
    for (std::size_t k = 0; k < model_.size(); ++k)
      model_[k] = static_cast<float>(static_cast<double>(model_[k]) +
                                     (static_cast<double>(got[k]) - static_cast<double>(sent[k])) * 0.5);
    local.bump();
    ctx.memory_traffic(4.0 * model_bytes);
  }
  sent_buffer = core::Buffer();  // back to the pool: the exchange is over
  // Lag of this gradient: model changes (remote averages, this worker's own average) since the
  // parameters it was computed on were read.
  staleness_.add(local.version() - read_version_);
  std::copy(model_.begin(), model_.end(), params.begin());
  outcome.applied = finish_update(input, taken, options_.non_finite);
  if (outcome.applied) {
    std::copy(params.begin(), params.end(), model_.begin());
    local.bump();
  }
  ctx.memory_traffic((outcome.applied ? 4.0 : 2.0) * model_bytes);
  read_version_ = local.version();
  return outcome;
}

void AdpsgdStrategy::restore_params(std::span<float> params) {
  collective::Window::Local local = window_->local();
  std::copy(model_.begin(), model_.end(), params.begin());
}

void AdpsgdStrategy::rejoin(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "adpsgd: rejoin() before attach() or after finish()");
  FAST_ENFORCE_AS(core::InvalidUsage, !compresses(options_), "adpsgd: rejoin with compress = '{}': {}",
                  options_.compress, "the links' codec references would not match the neighbours'");
  FAST_ENFORCE_EQ(state.params.size(), model_.size(), "adpsgd: the parameter count changed since construction");
  if (window_->get_first_live(neighbors_, core::MutableView(state.params)) >= 0) {
    adopt(state.params);
    return;
  }
  FAST_THROW(core::PeerLost, "adpsgd: worker {} rejoins but none of its neighbours ({}) is live to take a model from",
             comm_.rank(), fmt::join(neighbors_, ", "));
}

void AdpsgdStrategy::save_state(Checkpoint& out) {
  // During the run (a periodic checkpoint, between two of this worker's steps): its parameters
  // are its model as its last step left it; only a codec's links change with every exchange.
  FAST_ENFORCE_AS(core::InvalidUsage, finished_ || !compresses(options_),
                  "adpsgd: save_state() before finish() with compress = '{}' (the links' references change with "
                  "every exchange: the checkpoint is taken once every exchange has landed)",
                  options_.compress);
  window_->save_links("adpsgd.window", out);  // with a codec: its links' references; else nothing
}

void AdpsgdStrategy::restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "adpsgd: restore_state() before attach() or after finish()");
  FAST_ENFORCE_EQ(state.params.size(), model_.size(), "adpsgd: the parameter count changed since construction");
  window_->restore_links("adpsgd.window", checkpoint, source);
  adopt(state.params);
}

void AdpsgdStrategy::adopt(std::span<const float> model) {
  collective::Window::Local local = window_->local();
  std::copy(model.begin(), model.end(), model_.begin());
  local.bump();
  read_version_ = local.version();
}

void AdpsgdStrategy::finish(ModelState state) {
  if (finished_) return;
  finished_ = true;
  // Every worker's exchanges completed inside its steps; close() returns once every worker got
  // here, so no average can reach model_ afterwards.
  window_->close();
  collective::Window::Local local = window_->local();
  FAST_ENFORCE_EQ(state.params.size(), model_.size(), "adpsgd: the parameter count changed since construction");
  std::copy(model_.begin(), model_.end(), state.params.begin());
}

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::adpsgd_registration() {
  return {.name = "adpsgd",
          .summary = "asynchronous pairwise gossip",
          .make = factory_of<AdpsgdStrategy>(),
          .options = {topology_option()},
          .check = &AdpsgdStrategy::check_options,
          .asynchronous = true,
          .rejoin = &rejoin_without_codec,
          .save_during_run = &save_during_run_without_codec};
}

}  // namespace fast::strategy
