#include "fast/strategy/acid.hpp"
#include "builtin.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/ranges.h>

#include "fast/core/error.hpp"
#include "fast/core/random.hpp"
#include "fast/core/saved_state.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/mixing.hpp"
#include "fast/topology/spectral.hpp"

namespace fast::strategy {

AcidConstants acid_constants(const topology::Graph& graph, double comm_rate) {
  const int n = graph.size();
  FAST_ENFORCE(n >= 2, "acid: the paper's constants need at least 2 workers, got {}", n);
  FAST_ENFORCE(std::isfinite(comm_rate) && comm_rate > 0, "acid: comm_rate must be > 0, got {}", comm_rate);
  FAST_ENFORCE(graph.is_symmetric(), "acid: the topology must be undirected");
  topology::check_connected(graph);
  // Lambda = sum over undirected edges of lambda_ij (e_i - e_j)(e_i - e_j)^T, with
  // lambda_ij = (comm_rate / 2) (1 / d_i + 1 / d_j): i initiates at rate comm_rate / 2 and picks j
  // with probability 1 / d_i, and the other way round (topology::gossip_laplacian_spectrum).
  const topology::GossipLaplacianSpectrum spectrum = topology::gossip_laplacian_spectrum(graph, comm_rate);
  AcidConstants c;
  c.chi1 = 1.0 / spectrum.algebraic_connectivity;
  c.chi2 = spectrum.max_edge_resistance / 2;
  c.eta = 1.0 / (2.0 * std::sqrt(c.chi1 * c.chi2));
  c.alpha_tilde = 0.5 * std::sqrt(c.chi1 / c.chi2);
  return c;
}

void acid_mix(std::span<float> x, std::span<float> x_tilde, double eta, double dt) {
  FAST_ENFORCE_EQ(x.size(), x_tilde.size(), "acid_mix: x and x~ must have one length");
  FAST_ENFORCE(std::isfinite(eta) && eta >= 0 && std::isfinite(dt) && dt >= 0,
               "acid_mix: eta and dt must be finite and >= 0, got eta = {}, dt = {}", eta, dt);
  if (eta == 0 || dt == 0) return;
  const double decay = std::exp(-2.0 * eta * dt);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double mean = 0.5 * (static_cast<double>(x[i]) + x_tilde[i]);
    const double half_diff = 0.5 * (static_cast<double>(x[i]) - x_tilde[i]) * decay;
    x[i] = static_cast<float>(mean + half_diff);
    x_tilde[i] = static_cast<float>(mean - half_diff);
  }
}

namespace {
// The graph of `options.topology` on n workers, checked for acid (the options' ranges are their
// declarations', checked by make_strategy).
topology::Graph acid_graph(const StrategyOptions& options, int n) {
  return topology::make_undirected_connected(options.topology, n, options.seed, "acid",
                                             "acid needs an undirected one (pairwise exchanges)");
}
}  // namespace

void AcidStrategy::check_options(const StrategyOptions& options, int workers) { (void)acid_graph(options, workers); }

AcidStrategy::AcidStrategy(const StrategyOptions& options, collective::Communicator& comm)
    : Strategy(comm), options_(options) {
  const int n = comm.size();
  const topology::Graph graph = acid_graph(options, n);
  neighbors_ = graph.neighbors_out(comm.rank());
  // With a codec, a communication moves the fraction gamma of the paper's update; in expectation
  // that is the paper's process at the rate gamma comm_rate, so the constants are those of that rate.
  if (compresses(options))
    gamma_ = options.consensus_step > 0 ? options.consensus_step : default_consensus_step(options.compress);
  AcidConstants c{.eta = 0, .alpha_tilde = kAlpha};  // one worker: no communication, no momentum
  if (n >= 2) c = acid_constants(graph, gamma_ * options.comm_rate);
  eta_ = options.acid_eta == -1 ? c.eta : options.acid_eta;
  alpha_tilde_ = options.acid_alpha_tilde == -1 ? c.alpha_tilde : options.acid_alpha_tilde;
}

AcidStrategy::~AcidStrategy() = default;

void AcidStrategy::attach(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ == nullptr, "acid: attach() called twice");
  const std::size_t len = state.params.size();
  const bool codec = compresses(options_);
  if (codec) common_start(state);
  x_ = state.params;
  x_tilde_.assign(x_.begin(), x_.end());
  exposed_.assign(3 * len, 0.0f);
  std::copy(x_.begin(), x_.end(), exposed_.begin());
  difference_.resize(len);
  before_.resize(len);
  // The exposed tensor holds three copies of the model's shape (x, inbox, inbox~).
  if (!state.layout.empty()) layout_ = core::repeated_layout(core::Layout(state.layout.begin(), state.layout.end()), 3);
  collective::WindowOptions window_options = codec_window(options_, layout_.empty() ? nullptr : &layout_);
  if (codec) {
    start_ = exposed_;  // (x0, 0, 0) on every worker
    window_options.initial = [this](int) { return std::span<const float>(start_); };
  }
  window_ = std::make_unique<collective::Window>(comm_, "acid.exchange", core::MutableView(std::span<float>(exposed_)),
                                                 std::move(window_options));
}

std::vector<AcidEvent> AcidStrategy::events(std::int64_t step) const {
  FAST_ENFORCE(step >= 0, "acid: events of step {}: the step must be >= 0", step);
  std::vector<AcidEvent> out;
  if (neighbors_.empty()) return out;
  // The stream of (seed, rank, step): mix64 chained over the seed's first SplitMix64 output, the
  // rank and the step. Poisson by Knuth's product (mean = comm_rate / 2 <= 32: exp(-mean) > 1e-14).
  using core::mix64;
  core::SplitMix64 rng(mix64(mix64(core::splitmix64_at(options_.seed, 1) ^ static_cast<std::uint64_t>(comm_.rank())) ^
                             static_cast<std::uint64_t>(step)));
  const int count = core::poisson_knuth(rng, options_.comm_rate / 2);
  const auto degree = static_cast<double>(neighbors_.size());
  for (int k = 0; k < count; ++k) {
    const double time = core::uniform01_open(rng());
    const auto index = std::min(neighbors_.size() - 1, static_cast<std::size_t>(core::uniform01_open(rng()) * degree));
    out.push_back({time, neighbors_[index]});
  }
  std::sort(out.begin(), out.end(), [](const AcidEvent& a, const AcidEvent& b) { return a.time < b.time; });
  return out;
}

void AcidStrategy::fold_and_publish() {
  const std::size_t len = x_.size();
  collective::Window::Local local = window_->local();
  float* published = exposed_.data();
  float* inbox = published + len;
  float* inbox_tilde = inbox + len;
  for (std::size_t i = 0; i < len; ++i) {
    x_[i] += inbox[i];
    x_tilde_[i] += inbox_tilde[i];
    inbox[i] = 0.0f;
    inbox_tilde[i] = 0.0f;
    published[i] = x_[i];
  }
  local.bump();
}

int AcidStrategy::live_partner(int peer) const {
  const runtime::Context& ctx = comm_.context();
  if (ctx.alive(peer)) return peer;
  // The next live neighbour after the lost one, cyclically in neighbour order; -1 if none.
  const auto at = static_cast<std::size_t>(std::find(neighbors_.begin(), neighbors_.end(), peer) - neighbors_.begin());
  for (std::size_t k = 1; k < neighbors_.size(); ++k) {
    const int other = neighbors_[(at + k) % neighbors_.size()];
    if (ctx.alive(other)) return other;
  }
  return -1;
}

void AcidStrategy::communicate(int peer) {
  const std::size_t len = x_.size();
  const runtime::Context& ctx = comm_.context();
  // gamma = 1 without a codec. The coefficients are the float steps, so the peer's product
  // coefficient * m (exact in double, rounded once) equals this worker's float product.
  const auto alpha = static_cast<float>(gamma_ * kAlpha);
  const auto alpha_tilde = static_cast<float>(gamma_ * alpha_tilde_);
  // Peer's [published | inbox | inbox~]: m = x_i - (published + inbox), inbox += alpha m,
  // inbox~ += alpha~ m, atomically under the peer's window lock; m comes back.
  const std::array<double, 3> coefficients{0.0, alpha, alpha_tilde};
  const double t0 = ctx.now();
  try {
    window_
        ->exchange_difference(peer, core::ConstView(std::span<const float>(x_.data(), len)),
                              core::MutableView(std::span<float>(difference_)), coefficients, 2)
        .wait();
  } catch (const core::PeerLost&) {
    if (!runtime::lost_since(ctx, peer, t0)) throw;
    return;  // lost during the exchange: this worker's x_i, x~_i stay as they were
  }
  for (std::size_t i = 0; i < len; ++i) {
    x_[i] -= alpha * difference_[i];
    x_tilde_[i] -= alpha_tilde * difference_[i];
  }
  ++communications_;
}

StepOutcome AcidStrategy::step(const StepInput& input) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_,
                  "acid: step() needs attach() first and no finish() yet");
  FAST_ENFORCE(input.state.params.data() == x_.data() && input.state.params.size() == x_.size(),
               "acid: step() must get the parameters given to attach()");
  runtime::Context& ctx = comm_.context();
  StepOutcome outcome;
  double last = 0;  // time of the previous event within this step (0: the previous gradient event)
  for (const AcidEvent& e : events(input.step)) {
    acid_mix(x_, x_tilde_, eta_, e.time - last);
    last = e.time;
    fold_and_publish();
    const double t0 = ctx.now();
    if (const int peer = live_partner(e.peer); peer >= 0) communicate(peer);
    outcome.comm_seconds += ctx.now() - t0;
    fold_and_publish();
  }
  // The gradient event at the end of the step: mix, fold, then the same optimizer step on x and x~.
  acid_mix(x_, x_tilde_, eta_, 1.0 - last);
  fold_and_publish();
  std::copy(x_.begin(), x_.end(), before_.begin());
  // A non-finite gradient only skips (or fails) this worker's update (u = 0); its neighbours never
  // wait on it: communications are one-sided.
  outcome.applied = apply_update(input, options_.non_finite);
  if (outcome.applied)
    for (std::size_t i = 0; i < x_.size(); ++i) x_tilde_[i] += x_[i] - before_[i];
  fold_and_publish();
  return outcome;
}

void AcidStrategy::save_state(Checkpoint& out) {
  // During the run (a periodic checkpoint, between two of this worker's steps): x (the
  // parameters) and x~ as this worker's last step left them; only a codec's links change with
  // every exchange.
  FAST_ENFORCE_AS(core::InvalidUsage, finished_ || !compresses(options_),
                  "acid: save_state() before finish() with compress = '{}' (the links' references change with "
                  "every exchange: the checkpoint is taken once every exchange has landed)",
                  options_.compress);
  {
    collective::Window::Local local = window_->local();
    out.arrays.insert_or_assign("acid.x_tilde", x_tilde_);
  }
  window_->save_links("acid.window", out);  // with a codec: its links' references
}

void AcidStrategy::restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_ && state.params.data() == x_.data(),
                  "acid: restore_state() must come after attach(), with its parameters, and before finish()");
  const std::vector<float>& x_tilde = checkpoint.array("acid.x_tilde", x_tilde_.size(), source);
  window_->restore_links("acid.window", checkpoint, source);
  {
    collective::Window::Local local = window_->local();
    x_tilde_ = x_tilde;
  }
  fold_and_publish();  // the restored x (Worker::restore wrote it) becomes what the neighbours read
}

void AcidStrategy::rejoin(ModelState state) {
  FAST_ENFORCE_AS(core::InvalidUsage, window_ != nullptr && !finished_ && state.params.data() == x_.data(),
                  "acid: rejoin() needs attach() first, with its parameters, and no finish() yet");
  FAST_ENFORCE_AS(core::InvalidUsage, !compresses(options_), "acid: rejoin with compress = '{}': {}", options_.compress,
                  "the links' codec references would not match the neighbours'");
  if (window_->get_first_live(neighbors_, core::MutableView(std::span<float>(before_))) < 0)
    FAST_THROW(core::PeerLost, "acid: worker {} rejoins but none of its neighbours ({}) is live to take a model from",
               comm_.rank(), fmt::join(neighbors_, ", "));
  // x = x~ = the neighbour's x; what reached the inboxes before was computed against this worker's
  // model before the copy, so it is dropped; the copy is published.
  const std::size_t len = x_.size();
  collective::Window::Local local = window_->local();
  std::copy(before_.begin(), before_.end(), x_.begin());
  std::copy(before_.begin(), before_.end(), x_tilde_.begin());
  std::copy(before_.begin(), before_.end(), exposed_.begin());
  std::fill(exposed_.begin() + static_cast<std::ptrdiff_t>(len), exposed_.end(), 0.0f);
  local.bump();
}

void AcidStrategy::finish(ModelState /*state*/) {
  if (finished_ || window_ == nullptr) return;
  finished_ = true;
  window_->close();  // every worker's accumulations into this worker's inboxes have landed
  fold_and_publish();
}

// The registry entry: the strategy's name, factory, options and checks (builtin.hpp).
StrategyRegistration builtin::acid_registration() {
  return {.name = "acid",
          .summary = "A2CiD2",
          .make = factory_of<AcidStrategy>(),
          .options = {StrategyOption::field("comm_rate", &StrategyOptions::comm_rate,
                                            "expected pairwise communications per gradient step.")
                          .greater_than(0)
                          .at_most(AcidStrategy::kMaxCommRate),
                      StrategyOption::field("acid_eta", &StrategyOptions::acid_eta,
                                            "momentum mixing rate per gradient step; -1: from the graph, as the "
                                            "paper sets it.")
                          .at_least(0)
                          .or_exactly(-1),
                      StrategyOption::field("acid_alpha_tilde", &StrategyOptions::acid_alpha_tilde,
                                            "gossip weight of the momentum variable; -1: from the graph, as the "
                                            "paper sets it.")
                          .at_least(0)
                          .or_exactly(-1),
                      topology_option(), consensus_step_option()},
          .check = &AcidStrategy::check_options,
          .asynchronous = true,
          .rejoin = &rejoin_without_codec,
          .save_during_run = &save_during_run_without_codec};
}

}  // namespace fast::strategy
