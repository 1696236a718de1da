#pragma once
// Strategy: what a worker does with a freshly computed gradient — communicate, aggregate, update.
// One Strategy object per worker, created by name through the registry (make_strategy), so the
// training loop, the CLI and the benchmarks never name a concrete strategy.
//
// Threading: a Strategy is used by its worker's main activity; a strategy that runs background
// activities (asynchronous ones) synchronises through the worker's Context primitives only.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fast/collective/codec_allreduce.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/collective/window.hpp"
#include "fast/compress/dgc.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/compress/meter.hpp"
#include "fast/core/layout.hpp"
#include "fast/optim/optimizer.hpp"
#include "fast/strategy/option.hpp"

namespace fast::core {
struct SavedState;  // fast/core/saved_state.hpp
}  // namespace fast::core

namespace fast::strategy {

using Checkpoint = core::SavedState;  // its file format: fast/strategy/checkpoint.hpp

// A replica's flat float32 parameters and gradients, owned by the framework adapter. Same length.
// layout (optional; empty = one flat vector) names the model's tensors inside the flat buffers, for
// codecs that use shapes (powersgd); it must cover [0, params.size()) in order when given.
struct ModelState {
  std::span<float> params;
  std::span<float> grads;
  std::span<const core::TensorBlock> layout;
};

// What to do when a step's aggregated gradient holds NaN or infinity.
enum class NonFinitePolicy : std::uint8_t {
  skip,   // leave the parameters untouched, count the step as skipped, go on (default)
  error,  // throw InvalidArgument naming the step
};

// The options of a strategy, an aggregate (tests and library users fill it with designated
// initializers). Its fields are the typed view of the built-in strategies' declared options: each
// field but name, seed, dgc_warmup_steps and optimizer (filled in by the framework: Worker,
// train()) is bound to a StrategyOption declared beside the strategy that reads it (its file's
// registration function; the options several strategies share in src/strategy/shared_options.cpp),
// which holds its key, type, range and help; a field's initializer is its declared default.
// Options declared by strategies registered from outside the library live in `values`.
struct StrategyOptions {
  std::string name = "allreduce";                      // one of strategy_names()
  std::size_t chunk_bytes = std::size_t{4} << 20;      // pipeline piece of all-reduce based exchanges
  NonFinitePolicy non_finite = NonFinitePolicy::skip;  // reaction to a NaN/inf gradient
  std::int64_t period = 8;                             // local-sgd: average the models every `period` steps
  std::int64_t sync_warmup = 0;                        // local-sgd: first steps with gradient all-reduce
  std::string topology = "ring";                       // dpsgd, adpsgd: make_topology spec; gosgd: make_schedule spec
  std::uint64_t seed = 0;                              // decentralized strategies: seed of random topologies
  std::string mode = "async";                          // ps: sync | async | ssp
  std::int64_t staleness = 4;                          // ps ssp: bound on the clock lag of a gradient
  std::int64_t servers = 1;                            // ps: server shards, hosted by ranks 0..servers-1
  // ps async/ssp: what the learning rate means when every gradient is its own step. "per-sample"
  // (default): the server applies each worker's gradient with lr / N, so N pushes move the model
  // as far as one averaged allreduce step over the same N x batch samples; "per-gradient": with
  // lr itself (Downpour as published; N times the step per sample). Other strategies (and sync)
  // already average and ignore it. docs/strategies.md "Learning-rate semantics".
  std::string lr_semantics = "per-sample";
  // ps async/ssp: "inverse" divides each gradient's learning rate by its version lag, at least 1
  // (staleness-aware async SGD); "none": every gradient at the rate its worker sent.
  std::string lr_staleness = "none";
  double alpha = 0.1;               // easgd: elastic moving rate
  std::int64_t tau = 4;             // easgd: steps between elastic exchanges
  double comm_rate = 1.0;           // acid: expected communications per gradient step
  double acid_eta = -1;             // acid: momentum mixing rate; < 0: from the graph (paper)
  double acid_alpha_tilde = -1;     // acid: gossip weight of x~; < 0: from the graph (paper)
  double gossip_probability = 1.0;  // gosgd: probability that a step pushes to a peer, in (0, 1]
  // allreduce and ps sync: how the W gradients are combined: mean | median | trimmed-mean:F | krum:F | multi-krum:F[:M]
  // (Aggregate; allreduce's robust rules all-gather every gradient). Other strategies take only mean.
  std::string aggregate = "mean";
  // Tests and demonstrations: "KIND@W1,W2" (KIND nan | zeros | scale:FACTOR) makes those workers'
  // gradients faulty before every step; KIND exit-while-admitting (elastic runs),
  // exit-while-checkpointing (with checkpoint_dir) or exit-while-ending (elastic runs) makes them
  // kill themselves while the members admit a worker taken back, while a checkpoint is written, or
  // at the end of the run (FaultInjection); "" none. Any strategy.
  std::string fault_inject;
  std::string compress = "none";          // codec of every tensor the strategy sends: make_codec spec
  std::string sparse_allreduce = "auto";  // allreduce, local-sgd with a sparse codec: auto | gather | dense
                                          // (collective::SparseReduce)
  double consensus_step = 0;              // dpsgd, acid with a codec: CHOCO's gamma in (0, 1]; 0: by codec
  // Deep Gradient Compression (compress::Dgc, docs/compression.md): allreduce and ps, with a codec
  // that has a keep ratio (topk:ratio=R, randk:ratio=R) and optimizer sgd, momentum or nesterov.
  // The momentum runs on each worker before the sparsification; the aggregate is applied with
  // plain SGD. validate_dgc() states what is refused.
  bool dgc = false;
  double dgc_clip = 0;                // dgc: global L2 clipping bound C (C / sqrt(workers) per worker); 0: off
  bool dgc_masking = false;           // dgc: momentum factor masking (off: better with the local view)
  bool dgc_local_view = true;         // dgc: the gradient at x - v (compress::Dgc, FAST's addition)
  double dgc_warmup_ratio = 0.25;     // dgc: density at the first step of the sparsity warm-up, in (0, 1]
  std::int64_t dgc_warmup_steps = 0;  // dgc: steps of the warm-up (0: none; fast train: dgc_warmup_epochs)
  // The worker's optimizer settings, filled in by Worker: strategies that update a model other
  // than the replica (ps servers, easgd's centre) build their own optimizer from them.
  optim::OptimizerOptions optimizer;
  // The options declared without a field (strategies registered from outside the library), by
  // name, when set; an option not set here has its declared default.
  std::map<std::string, OptionValue, std::less<>> values;

  // The value of the declared option `name` (a field's or not), as declared: get_integer for
  // integer options, get_number for number options, get_string for string and choice options,
  // get_bool for boolean ones. InvalidArgument naming the option for an undeclared name or a
  // getter of another type.
  std::int64_t get_integer(std::string_view name) const;
  double get_number(std::string_view name) const;
  std::string get_string(std::string_view name) const;
  bool get_bool(std::string_view name) const;
  // Validates `value` against the declaration of option `name` and stores it (the field or
  // `values`); InvalidArgument naming the option otherwise.
  void set(std::string_view name, const OptionValue& value);
};

// Everything one step needs. lr is this step's learning rate (the schedule already applied).
struct StepInput {
  ModelState state;
  optim::Optimizer& optimizer;
  double lr;
  std::int64_t step;  // 0-based index of this worker's step
};

// Staleness of applied gradients: the version lag of a gradient is the number of updates its model
// received between the read of the parameters the gradient was computed on and the gradient's
// application (0 for synchronous strategies).
struct StalenessStats {
  std::uint64_t count = 0;  // gradients applied
  double sum = 0;           // sum of their lags
  std::uint64_t max = 0;    // largest lag
  void add(std::uint64_t lag) noexcept {
    ++count;
    sum += static_cast<double>(lag);
    if (lag > max) max = lag;
  }
  void merge(const StalenessStats& o) noexcept {
    count += o.count;
    sum += o.sum;
    if (o.max > max) max = o.max;
  }
  double mean() const noexcept { return count == 0 ? 0.0 : sum / static_cast<double>(count); }
};

struct StepOutcome {
  bool applied = true;      // false when the update was skipped (non-finite gradient)
  double comm_seconds = 0;  // time spent communicating or waiting for peers, runtime clock
};

class Strategy {
 public:
  // Whether options.compress names a codec other than "none".
  static bool compresses(const StrategyOptions& options);
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  // Collective, once, from the Worker's constructor before the first step: this worker's replica
  // with its initial parameters, for strategies that size or seed their own state from it
  // (windows, a centre model). The spans stay valid for the strategy's lifetime. Default: nothing.
  virtual void attach(ModelState /*state*/) {}
  // Called after the framework wrote this worker's mini-batch gradient into input.state.grads.
  // Updates input.state.params as the strategy prescribes. May overwrite grads.
  virtual StepOutcome step(const StepInput& input) = 0;
  // Elastic groups (Worker::regroup_survivors): true when step() of step `step` (0-based) may
  // change this worker's state (parameters, optimizer) and then fail with PeerLost in a later
  // collective of the same step (local-sgd's averaging steps: the local update, then the
  // averaging). The Worker then saves the state before such a step of an elastic run and puts it
  // back when the step fails, so a failed step leaves nothing behind. Default false: every change
  // comes after the step's last collective.
  virtual bool changes_state_before_last_collective(std::int64_t /*step*/) const { return false; }
  // Elastic groups: called on every member after the group changed (Communicator::members(): a
  // regrouping of the survivors or an admission), with the member's parameters already those of
  // the group (forget_own_state() called where it applies), before the next step. Strategies whose exchanges depend on
  // the group rebuild them here (dpsgd: its graph and mixing weights over the members). Default: nothing (collectives
  // and averages already follow the group). InvalidArgument when the strategy cannot work with the new group; the run
  // then ends with it.
  virtual void regrouped(ModelState /*state*/) {}
  // Elastic groups: called, before regrouped(), on a worker whose per-worker state (what is each
  // worker's own, not the group's: a codec's error feedback, DGC's velocity) it must not go on
  // from: every survivor of a regrouping (the members restored the source's state, and the
  // source's own may hold part of the step that failed, whose collective failed after the step
  // had folded its gradient in), and a worker admitted into a run under way (it restored the first
  // member's state). Not on the members at an admission, which comes between two steps.
  // Strategies start that state afresh here. Default: nothing.
  virtual void forget_own_state(ModelState /*state*/) {}
  // Collective (every worker calls it at the same point): writes the representative model into out
  // (same length as params). Default: the consensus average of all replicas.
  virtual void representative(ModelState state, std::span<float> out);
  // The representative model where it lies in memory the worker keeps anyway (for allreduce
  // without DGC's local view: the worker's own params), so that an evaluation reads it in place
  // instead of copying it (0.94 MB per mlp worker at a sim run's final evaluation); empty when
  // representative() has to compute it. Not collective; the same answer on every worker. The span
  // stays valid, and the model unchanged, until the next step.
  virtual std::span<const float> representative_in_place(ModelState /*state*/) const { return {}; }
  // True when the strategy keeps every replica identical after each step (synchronous gradient
  // averaging); evaluation then skips measuring their spread.
  virtual bool replicas_identical() const { return false; }
  // True when step() never waits for other workers to take their steps, so workers may take
  // different numbers of steps (asynchronous strategies). Training loops then share a sample
  // budget instead of running lockstep epochs, and evaluate mid-run with snapshot(), not with
  // the collective representative().
  virtual bool asynchronous() const { return false; }
  // Collective, once per worker, after its last step and before the final representative():
  // stops background activities and leaves state.params at this worker's final model. In an
  // elastic run `fast train` calls it after the final evaluation and checkpoint instead
  // (training/run_end.hpp): a strategy that declares `elastic` leaves the parameters there as its
  // last step did.
  virtual void finish(ModelState /*state*/) {}
  // Not collective (asynchronous strategies, mid-run evaluation): writes this worker's current
  // view of the representative model into out and returns true, or returns false so the Worker
  // averages the replicas every worker publishes.
  virtual bool snapshot(ModelState /*state*/, std::span<float> /*out*/) { return false; }
  // Asynchronous strategies that already expose this worker's current replica one-sidedly: an
  // open window whose f32 elements [0, n) hold the replica after every step, from attach() until
  // finish(). The Worker then reads replicas from it instead of publishing a copy of its own.
  // Default: none (the Worker publishes).
  virtual collective::Window* replica_window() { return nullptr; }
  // Checkpoints (Worker::save / Worker::restore): the strategy's own state beyond the parameters
  // and the worker's optimizer, as named sections of the checkpoint ("<strategy>.<name>").
  // save_state: also after finish() (the final state), and, for an asynchronous strategy whose
  // registration's save_during_run check returns "", during the run between two of this worker's
  // steps (a periodic checkpoint: what other workers change meanwhile is read under the window's
  // guard). restore_state: after Worker::restore put the parameters back into state.params,
  // before the first step: adopts them as this worker's own state (a model or a shard exposed in a
  // window) and reads its sections, checking every one (IoError naming `source`) before changing
  // anything. Not collective. Defaults: nothing.
  virtual void save_state(Checkpoint& /*out*/) {}
  virtual void restore_state(const Checkpoint& /*checkpoint*/, std::string_view /*source*/, ModelState /*state*/) {}
  // A worker that joins a run under way in place of a lost one (Context::joins_run_under_way),
  // after attach(): takes a model from a live peer into state.params and its own exposed state,
  // so its first step starts from the run's progress. Where the Worker publishes the replicas (no
  // replica_window()) and rejoins_from_published_replica(), state.params already holds the lowest
  // live peer's published replica when rejoin() is called. Not collective. Default: InvalidUsage
  // (the strategy cannot take a worker back; rejoin_refusal() says why).
  virtual void rejoin(ModelState state);
  // Whether rejoin() starts from a live peer's published replica (read by the Worker first); false
  // for strategies that take their model elsewhere (easgd's centre, ps's servers). Default false.
  virtual bool rejoins_from_published_replica() const { return false; }
  // Staleness of the gradients applied by this worker (a parameter server: by its shard).
  virtual StalenessStats staleness() const { return {}; }
  // This worker's codec traffic (StrategyOptions::compress): every tensor it encoded, dense
  // bytes against encoded bytes. Empty with compress = "none".
  compress::CompressionStats compression() const { return meter_.stats(); }
  // Bytes of the state this worker's strategy keeps from one step to the next besides the replica
  // (parameters, gradients) and the worker's optimizer: models and copies it exposes in windows,
  // its weights and centre, a parameter server's shard and optimizer. Scratch buffers that a step
  // fills before it reads them are not state. The memory floor of a run sums it
  // (docs/simulation.md, "Memory floor"). Default: 0 (nothing but the replica).
  virtual std::size_t state_bytes() const { return 0; }
  // Whether steps apply the worker's own optimizer (StepInput::optimizer), so that its state is
  // written and is part of the worker's state (Worker::state_bytes). False where another optimizer
  // takes the updates: a parameter server's (ps), DGC's plain SGD (allreduce with dgc); the worker's
  // optimizer is then allocated and never written. Valid once attach()ed. Default: true.
  virtual bool steps_worker_optimizer() const { return true; }

 protected:
  explicit Strategy(collective::Communicator& comm) : comm_(comm) {}
  // The local update every strategy ends with: input.optimizer applied to input.state with its
  // grads when every gradient element is finite. Otherwise, per `policy`, throws InvalidArgument
  // naming the strategy, step and worker, or logs a warning and leaves the parameters untouched.
  // Returns whether the update was applied. `averaged`: input.state.grads is the average of every
  // worker's gradient (the same on every worker), not this worker's own; the messages say so.
  bool apply_update(const StepInput& input, NonFinitePolicy policy, bool averaged = false);
  // apply_update in two halves, for a step that exchanges the parameters between taking the
  // gradient and updating them (dpsgd, adpsgd), so that the exchange may use the gradient's storage:
  // take_gradient_first checks the gradient and, where the optimizer takes it first
  // (Optimizer::takes_gradient_first) and the group is not elastic, gives it to the optimizer. (An
  // elastic group that loses a worker during the exchange goes on from the state of one member,
  // Worker::regroup_survivors, which must not hold a gradient taken and not applied.) `scratch` is then
  // input.state.grads, whose contents the step no longer needs; otherwise empty, and finish_update is apply_update.
  // finish_update ends the step: Optimizer::apply_taken, or the non-finite report (per `policy`);
  // returns whether the update was applied. A failure between the two ends the Worker's use (its
  // optimizer holds a gradient taken and not applied: Worker::step and save refuse), as a loss does
  // in a run that is not elastic (an asynchronous strategy goes on only after the losses it
  // absorbs within its step).
  struct TakenGradient {
    std::span<float> scratch;  // the gradient's storage, free until finish_update; empty: not taken
    bool finite = false;       // the gradient was finite (and the optimizer took it)
  };
  TakenGradient take_gradient_first(const StepInput& input);
  bool finish_update(const StepInput& input, const TakenGradient& taken, NonFinitePolicy policy);
  // A non-finite gradient at input.step on this worker, per `policy`: throws InvalidArgument naming
  // the strategy, step and worker, or logs a warning "worker R <what> <step>". `averaged`: the
  // gradient is the workers' average (any worker's may be the cause); its warning, the same on
  // every worker, comes from the group's first member only. The first kNonFiniteWarnings warnings
  // are logged, then one at the 10th, 100th, ... (the summary's skipped_steps counts every one).
  void report_non_finite(const StepInput& input, NonFinitePolicy policy, std::string_view what,
                         bool averaged = false) const;
  // Collective: sets every worker's state.params to worker 0's (a broadcast) and returns a copy.
  // Strategies that send states through a codec call it in attach(), so the references both ends
  // of a link keep start from the same model.
  std::vector<float> common_start(ModelState state);
  // Window options that send through options.compress, metered by this strategy; layout (when
  // not null) must outlive the window.
  collective::WindowOptions codec_window(const StrategyOptions& options, const core::Layout* layout = nullptr);
  // With options.dgc: this worker's compress::Dgc for numel elements, from options.optimizer and
  // the codec's keep ratio (validate_dgc() first); null without.
  std::unique_ptr<compress::Dgc> make_dgc(const StrategyOptions& options, std::size_t numel) const;
  // DGC after this worker encoded `key` through `feedback` (the slice starting at element offset
  // of its gradient): momentum factor masking of u and of the residual, when on.
  static void dgc_sent(compress::Dgc& dgc, compress::ErrorFeedback& feedback, std::uint64_t key,
                       std::size_t offset = 0);
  // The model a strategy sending gradients represents itself by: DGC's kept shared x with the local
  // view (the worker's params are then its view x - v), else params. dgc may be null.
  static std::span<const float> dgc_model(const compress::Dgc* dgc, std::span<const float> params);
  // The bytes a vector's elements take (state_bytes()).
  template <typename T, typename A>
  static std::size_t bytes_of(const std::vector<T, A>& v) noexcept {
    return v.size() * sizeof(T);
  }
  collective::Communicator& comm_;
  compress::CompressionMeter meter_;

 private:
  mutable std::int64_t non_finite_reports_ = 0;  // report_non_finite()'s warnings so far
};

std::vector<std::string> strategy_names();
// The consensus step (CHOCO-gossip's gamma, Koloskova et al. 2019) of a strategy that mixes
// states read through `codec` (a make_codec spec), when StrategyOptions::consensus_step is 0:
// 1 for none, fp16 and bf16 (nearly exact), 0.8 for int8, 0.4 for sign, 0.05 for the sparse
// codecs (topk, randk, threshold) and powersgd (values measured on Fashion-MNIST with dpsgd,
// docs/compression.md). Used by dpsgd and acid.
double default_consensus_step(const std::string& codec);
// With options.dgc: InvalidArgument, naming the option and what is expected, unless the strategy
// sends gradients (its registration's trait sends_gradients: allreduce, ps), the codec has a keep
// ratio (topk:ratio=R or randk:ratio=R) and options.optimizer is sgd, momentum or nesterov. Nothing
// without dgc. The ranges of the dgc options are their declarations' (make_strategy checks them).
// make_strategy calls it; fast train calls it before reading any data.
void validate_dgc(const StrategyOptions& options);
// For a Worker whose optimizer step is the caller's (WorkerOptions::external_optimizer):
// InvalidArgument, saying why, unless the strategy's registration has the trait
// external_optimizer for these options (allreduce) and dgc is off (DGC's update is FAST's own:
// momentum corrected on each worker before the exchange).
void validate_external_optimizer(const StrategyOptions& options);

// Checks `options` for a world of `workers` as make_strategy() and the strategy's constructor would
// (the name, every option the strategy reads against its declaration, DGC, the common options,
// and the strategy's own check: its options across each other and against the world size, its
// topology), without a communicator: `fast train` calls it before any data is read. Throws
// InvalidArgument.
void check_strategy_options(const StrategyOptions& options, int workers);
// The optimizer that applies DGC's aggregate: plain SGD, stepped at rate 1 by the strategies (the
// momentum, the weight decay and the learning rate were applied on each worker before the
// sparsification; compress::Dgc::accumulate).
optim::OptimizerOptions dgc_update_optimizer(const optim::OptimizerOptions& options);
// The collective::SparseReduce named by StrategyOptions::sparse_allreduce; InvalidArgument naming
// the option and the allowed values otherwise.
collective::SparseReduce parse_sparse_reduce(const std::string& name);
// The strategy options.name names, made after the checks every strategy shares (every option it
// reads against its declaration, DGC, the common options): its constructor receives its options
// in their declared ranges. Throws InvalidArgument for an unknown name (the message lists
// strategy_names()), for options those checks refuse and for what the constructor refuses.
std::unique_ptr<Strategy> make_strategy(const StrategyOptions& options, collective::Communicator& comm);

}  // namespace fast::strategy
