#pragma once
// Strategy `acid`: A2CiD2, asynchronous decentralized gossip with a continuized momentum (Nabli,
// Belilovsky, Oyallon, "A2CiD2: Accelerating Asynchronous Communication in Decentralized Deep
// Learning", NeurIPS 2023; the A2CiD2 slides, the authors' slides). Workers sit on an undirected connected
// topology. Each worker i keeps its replica x_i (the framework's parameters) and a second variable
// x~_i (starts equal to x_i). In the paper's continuized model, gradient steps (Poisson process
// N_i, rate 1) and pairwise communications (Poisson process M_ij of edge (i, j), rate lambda_ij)
// are events, and between events (x_i, x~_i) follows the linear mixing ODE:
//
//   dx_i  = eta (x~_i - x_i) dt - gamma grad F_i(x_i) dN_i - alpha  sum_j (x_i - x_j) dM_ij
//   dx~_i = eta (x_i - x~_i) dt - gamma grad F_i(x_i) dN_i - alpha~ sum_j (x_i - x_j) dM_ij
//
// What a worker does (Algorithm 1 of the paper, with this library's clock):
//   mixing over dt (closed form, acid_mix): the mean (x + x~) / 2 is constant and the difference
//     x - x~ decays as exp(-2 eta dt), so
//       x  <- (x + x~) / 2 + exp(-2 eta dt) (x - x~) / 2
//       x~ <- (x + x~) / 2 - exp(-2 eta dt) (x - x~) / 2
//   gradient event: u = optimizer(x, g, lr) - x (the worker's optimizer, any of optim's);
//       x <- x + u, x~ <- x~ + u (both variables take the same step, as -gamma grad F in the ODE)
//   communication event with neighbour j, m = x_i - x_j:
//       x_i <- x_i - alpha m,  x~_i <- x~_i - alpha~ m,  x_j <- x_j + alpha m,  x~_j <- x~_j + alpha~ m
//
// Clock (deterministic given seed and rank): time is counted in this worker's own gradient steps.
// Step t covers the interval (t, t + 1]; its gradient event is at t + 1. During it the worker
// initiates K ~ Poisson(comm_rate / 2) communications at times t + u_1 < ... < t + u_K, the u_k
// independent uniform on (0, 1) (a Poisson process of rate comm_rate / 2, cut into unit
// intervals), each with a neighbour drawn uniformly. Every communication moves both ends, so on a
// regular graph each worker takes part in comm_rate communications per gradient step in
// expectation (the paper's "rate of communication", e.g. 1 = one averaging per gradient), and
// edge (i, j) fires at rate lambda_ij = (comm_rate / 2) (1 / d_i + 1 / d_j). The draws of step t
// come from a counter-based generator keyed by (seed, rank, t) (events()), the same on every
// platform. The theory assumes workers compute at equal speed; a slower worker simply has a
// slower clock.
//
// The paper's constants (acid_constants), from the Laplacian of the communication process
// Lambda = sum_{(i,j) in E} lambda_ij (e_i - e_j)(e_i - e_j)^T:
//   chi_1 = 1 / (smallest positive eigenvalue of Lambda)           (inverse algebraic connectivity)
//   chi_2 = max_{(i,j) in E} (1/2) (e_i - e_j)^T Lambda^+ (e_i - e_j)   (maximal effective resistance)
//   alpha = 1/2,  alpha~ = (1/2) sqrt(chi_1 / chi_2),  eta = 1 / (2 sqrt(chi_1 chi_2))   (per step)
// chi_2 <= chi_1, so alpha~ >= 1/2; on the complete graph chi_1 = chi_2, alpha~ = alpha, and since
// x~ = x initially, x~ stays equal to x: A2CiD2 is then plain gossip (the momentum pays off on
// poorly connected graphs such as rings). Options acid_eta and acid_alpha_tilde override eta and
// alpha~ (-1, the default: the values above). acid_eta = 0 switches the momentum off: x then
// follows asynchronous randomized pairwise gossip averaging, x_i, x_j <- (x_i + x_j) / 2.
//
// Asynchronous realisation (nobody waits for a neighbour's training loop): each worker exposes a
// window "acid.exchange" of 3 |x| floats, [published x_j | inbox of x_j | inbox of x~_j], served
// by its owner's window service. Worker j's current x is its published copy plus its inbox. A
// communication of i with j is one atomic Window::exchange_difference: i sends s = x_i; j's
// service, under j's window lock, forms m = s - (published + inbox), adds alpha m to j's x inbox
// and alpha~ m to its x~ inbox, and returns m; i then applies x_i -= alpha m, x~_i -= alpha~ m.
// Because m is formed against j's current value under its lock, overlapping exchanges with one j
// (several neighbours, or a transfer slower than a gradient step) each see the previous ones'
// effect, as the paper's sequence of pairwise events does; and i applies the very m j applied, so
// what i removes, j's inbox receives. At each of its events (before a communication, at the
// gradient event, after each communication) a worker folds its inboxes into x_j, x~_j (after the
// mixing over the elapsed time, as if the neighbour's communication happened then) and
// republishes x_j, under its window's Local guard. Conserved quantities, exactly up to float
// rounding, whatever the interleaving and step counts: communications conserve sum_i (x_i +
// inbox_x_i) and sum_i (x~_i + inbox_x~_i); the mixing conserves each x_i + x~_i; so with zero
// gradients sum_i (x_i + x~_i + inboxes) is conserved, and with eta = 0 sum_i (x_i + inbox_x_i)
// is too. If exactly one worker steps at a time, every communication is the paper's exact
// pairwise update. (Before, a get of j's value and a separate accumulate were used: exchanges that
// overlapped all used the same stale x_j, their moves added up, and on a simulated cluster where a
// transfer outlasts a step the replicas diverged; docs/strategies.md.)
//
// Representative model: the average of the x_i (the default representative()); snapshot()
// averages the replicas the Worker publishes. finish() (collective) closes the window once every
// worker's accumulations have landed and folds the inboxes, so state.params is the final x_i.
// Non-finite gradients: the local update follows options.non_finite (apply_update); u = 0 when
// skipped; communications go on. Communication per communication: the initiator sends |x| floats
// and receives |x| floats (plus small headers) from one neighbour.
// Options: `topology` (undirected, connected; default ring), `comm_rate` (in (0, 64], default 1),
// `seed` (event draws, and random topologies), `acid_eta`, `acid_alpha_tilde` (>= 0, or -1),
// `consensus_step` (with a codec only, see below).
//
// With compress (docs/compression.md): both halves of the exchange travel as states (the codec's
// encoding of the difference from a reference both ends of the link keep): s = x_i to j, and j's
// x_j = published + inbox back; both ends form m = (reference of s) - (reference of x_j), the same
// at both, so the transfer stays exact. The value read is then the link's reference, which lags the
// peer's x: a link is refreshed only when its neighbour is drawn, and a lossy codec refreshes only
// part of it (randk a random quarter of the coordinates). With the full steps alpha, alpha~ that
// lag is a delayed feedback of gain alpha~ >= 1/2 and the pair diverges (acid x randk did). So,
// as CHOCO-gossip does (Koloskova et al. 2019; dpsgd here), a communication with a codec moves
// only the fraction gamma = `consensus_step` of the paper's update:
//       x_i <- x_i - gamma alpha m,  x~_i <- x~_i - gamma alpha~ m  (and the opposite at j),
// gamma in (0, 1], 0 (the default) picking default_consensus_step(codec): 1 for fp16 and bf16,
// 0.8 int8, 0.4 sign, 0.05 for the sparse codecs and powersgd. In expectation this is the paper's
// process at the communication rate gamma comm_rate, so the constants default to that rate's:
// alpha~ is unchanged (it depends on chi_1 / chi_2 only) and eta is gamma times the exact-read
// eta. The transfers stay exact (both ends apply the same m), so the sums above are still
// conserved. Without a codec gamma = 1 and consensus_step is ignored.
//
// On a lost peer: a communication event whose neighbour the runtime reports lost goes to the next
// live neighbour in neighbour order (none: the event is skipped). An exchange whose peer is lost
// during it leaves x_i and x~_i as they were (whether or not the lost peer applied its half),
// so this worker never counts a move toward a lost worker. The representative is the
// average of the survivors' models.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fast/collective/window.hpp"
#include "fast/strategy/strategy.hpp"
#include "fast/topology/graph.hpp"

namespace fast::strategy {

// The paper's constants for `graph` and `comm_rate` (see above). graph: undirected, connected,
// n >= 2; comm_rate > 0. InvalidArgument otherwise.
struct AcidConstants {
  double chi1 = 0;         // 1 / smallest positive eigenvalue of the Laplacian Lambda
  double chi2 = 0;         // largest (1/2) effective resistance of an edge under Lambda
  double eta = 0;          // 1 / (2 sqrt(chi1 chi2)), per gradient step
  double alpha_tilde = 0;  // (1/2) sqrt(chi1 / chi2)
};
AcidConstants acid_constants(const topology::Graph& graph, double comm_rate);

// The closed-form mixing of (x, x~) over dt >= 0 time units at rate eta >= 0 (see above), in
// place, element-wise in double. Same lengths.
void acid_mix(std::span<float> x, std::span<float> x_tilde, double eta, double dt);

// One communication event of a step: its time within the step, in (0, 1), and the neighbour.
struct AcidEvent {
  double time = 0;
  int peer = -1;
};

class AcidStrategy final : public Strategy {
 public:
  static constexpr double kAlpha = 0.5;  // the paper's alpha: full pairwise averaging of x
  static constexpr double kMaxCommRate = 64;

  // InvalidArgument for a directed, disconnected or unknown topology, comm_rate outside
  // (0, 64] or not finite, acid_eta / acid_alpha_tilde neither -1 nor finite and >= 0,
  // consensus_step outside [0, 1].
  AcidStrategy(const StrategyOptions& options, collective::Communicator& comm);
  // The checks that a declaration cannot make (make_strategy checked every option against its
  // declaration): the topology for `workers`. `fast train` runs them before any data is read.
  // Throws InvalidArgument.
  static void check_options(const StrategyOptions& options, int workers);
  ~AcidStrategy() override;
  std::string_view name() const override { return "acid"; }
  void attach(ModelState state) override;
  // The published x_i, elements [0, n) of "acid.exchange", refreshed at every event.
  // With a codec the window's reads are encoded, so the Worker publishes a dense copy instead.
  collective::Window* replica_window() override { return compresses(options_) ? nullptr : window_.get(); }
  StepOutcome step(const StepInput& input) override;
  bool asynchronous() const override { return true; }
  // x~, the exposed [x | inbox | inbox~] and, with a codec, its initial value.
  std::size_t state_bytes() const override { return bytes_of(x_tilde_) + bytes_of(exposed_) + bytes_of(start_); }
  // Collective: closes the window and folds the last inbox contributions into x_i and x~_i.
  void finish(ModelState state) override;
  // Checkpoints (taken after finish(), docs/faults.md): the second variable x~ ("acid.x_tilde"); the
  // restored parameters are published as x. restore_state: after attach(),
  // before the first step; IoError naming `source` for a missing or malformed value.
  void save_state(Checkpoint& out) override;
  void restore_state(const Checkpoint& checkpoint, std::string_view source, ModelState state) override;
  // A worker taking a lost rank back into the run (docs/faults.md, "Elastic asynchronous runs"):
  // x = the first live neighbour's published x, x~ = x; PeerLost when no neighbour is live.
  // Without a codec only (the links' references would not match).
  void rejoin(ModelState state) override;

  // The communications this worker initiates during its step `step` (>= 0), sorted by time; a
  // pure function of (seed, rank, step, comm_rate, topology).
  std::vector<AcidEvent> events(std::int64_t step) const;
  // The mixing rate in use (with a codec and acid_eta = -1: the constants of gamma comm_rate).
  double eta() const noexcept { return eta_; }
  // The paper's alpha~ (before the consensus step scales it).
  double alpha_tilde() const noexcept { return alpha_tilde_; }
  // gamma: the fraction of the paper's update a communication applies (1 without a codec).
  double consensus_step() const noexcept { return gamma_; }
  const std::vector<int>& neighbors() const noexcept { return neighbors_; }
  // This worker's x~ (after finish(): final, inbox folded). Read from the worker's main activity.
  std::span<const float> x_tilde() const noexcept { return x_tilde_; }
  // Communications this worker initiated.
  std::int64_t communications() const noexcept { return communications_; }

 private:
  // Under the Local guard: x += inbox_x, x~ += inbox_x~, inboxes = 0, published = x.
  void fold_and_publish();
  // One communication with peer (one Window::exchange_difference, then the local update by the
  // m it returns); a peer lost meanwhile leaves x_i, x~_i as they were.
  void communicate(int peer);
  // peer if alive, else the next live neighbour after it in neighbour order; -1 if none.
  int live_partner(int peer) const;

  StrategyOptions options_;
  std::vector<int> neighbors_;
  double eta_ = 0;
  double alpha_tilde_ = kAlpha;
  double gamma_ = 1;               // the consensus step (see above)
  std::span<float> x_;             // the replica (state.params)
  std::vector<float> x_tilde_;     // x~
  std::vector<float> exposed_;     // [published x | inbox x | inbox x~], exposed in the window
  std::vector<float> difference_;  // scratch: m = x_i - x_j of an exchange, as the neighbour formed it
  std::vector<float> before_;      // scratch: x before the optimizer step
  std::vector<float> start_;       // with a codec: the exposed tensor at attach, the same on every worker
  core::Layout layout_;            // the exposed tensor's: the model's layout three times
  std::unique_ptr<collective::Window> window_;
  bool finished_ = false;
  std::int64_t communications_ = 0;
};

}  // namespace fast::strategy
