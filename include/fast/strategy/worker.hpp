#pragma once
// Worker: the object a training loop talks to after its framework's backward pass. It owns this
// worker's Communicator, Strategy, Optimizer and learning-rate schedule, and applies them to the
// replica's flat parameters and gradients:
//
//   for each mini-batch: zero grads; forward; backward (framework) ; worker.step();
//   worker.finish();               // collective: stops background activities
//   worker.representative(out);    // collective: the model to evaluate or save
//
// Asynchronous strategies (strategy().asynchronous()): workers take different numbers of steps;
// every worker publishes a copy of its parameters after each step in a window ("worker.replicas"),
// unless the strategy already exposes its replica (Strategy::replica_window), so any worker can
// read the current consensus mid-run with snapshot() without the others.
//
// One Worker per worker; not thread-safe (call from the worker's main activity).

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fast/collective/communicator.hpp"
#include "fast/collective/window.hpp"
#include "fast/core/long_lived.hpp"
#include "fast/optim/optimizer.hpp"
#include "fast/optim/schedule.hpp"
#include "fast/runtime/context.hpp"
#include "fast/strategy/aggregate.hpp"
#include "fast/strategy/checkpoint.hpp"
#include "fast/strategy/strategy.hpp"

namespace fast::strategy {

// Elastic synchronous training (docs/faults.md, "Elastic synchronous training"): the learning rate
// after the group changed. keep: the schedule's, whatever the group's size (each step follows the
// mean gradient of the batches it has). linear: the schedule's times W_now / W_start, the members
// now (Communicator::group_size) over the workers the run started with (Communicator::size), so
// that the step per sample stays what it was: after a loss of 1 of 4 workers, 3/4 of the rate.
enum class ElasticLr { keep, linear };

struct WorkerOptions {
  StrategyOptions strategy;
  optim::OptimizerOptions optimizer;
  optim::ScheduleOptions schedule;
  collective::CommunicatorOptions communicator;  // all-reduce algorithm and network model
  // The optimizer step is the caller's (a framework's own optimizer, e.g. torch.optim): step()
  // exchanges and aggregates, leaves the aggregated gradient in state.grads and does not change
  // state.params; `optimizer` and `schedule` are not used (StepReport::lr is 0). Only for strategies
  // with the trait external_optimizer, without dgc (validate_external_optimizer; InvalidArgument).
  bool external_optimizer = false;
  // How the learning rate follows the group's size in an elastic run (communicator.elastic); not
  // used without it, nor with external_optimizer (whose rate is the caller's).
  ElasticLr elastic_lr = ElasticLr::keep;
};

struct SnapshotResult {
  double consensus_distance = 0;  // mean over workers of ||x_i - average||^2 of the published replicas
};

struct StepReport {
  std::int64_t step = 0;    // index of the step just taken (0-based)
  double lr = 0;            // learning rate used (the schedule's, scaled by WorkerOptions::elastic_lr)
  bool applied = true;      // false when the strategy skipped the update
  double comm_seconds = 0;  // communication and waiting time of this step, runtime clock
};

// Whether the strategy these options make is asynchronous (Strategy::asynchronous()), without
// making it: the trait `asynchronous` of its registration (fast/strategy/registry.hpp). A launcher
// decides before the workers start whether they may go on without a lost worker. The Worker
// checks that the strategy agrees with its registration.
bool asynchronous_strategy(const StrategyOptions& options);

// Rejoins (docs/faults.md, "Elastic asynchronous runs"): "" when a Worker of this strategy can
// join a run under way in place of a lost one (Worker::rejoin), else why not. A synchronous
// strategy never takes a worker back (a lost worker ends its run); an asynchronous one does where
// its registration's `rejoin` check returns "". The built-in asynchronous strategies (adpsgd,
// acid, easgd, gosgd, ps in mode async or ssp) rejoin without a codec (a model taken from a live
// peer, easgd's centre or ps's servers is all the state they need; gosgd starts again with mass 1);
// ps refuses a server's rank (its shard was lost with its process). `rank`: the worker that would
// rejoin (-1: any). Rank 0 never rejoins (the zmq runtime refuses it).
std::string rejoin_refusal(const StrategyOptions& options, int rank = -1);

// Periodic checkpoints (docs/faults.md, "Periodic checkpoints of asynchronous runs"): "" when the
// workers of this strategy can write them (every synchronous strategy; an asynchronous one where
// its registration's `save_during_run` check returns ""), else why not, as a clause. The built-in
// asynchronous strategies save during the run without a codec (ps: nor dgc).
std::string periodic_checkpoint_refusal(const StrategyOptions& options);

// Elastic synchronous training (docs/faults.md, "Elastic synchronous training"): "" when the
// survivors of a run of this strategy can go on without a lost worker (WorkerOptions' communicator
// elastic, Worker::regroup_survivors), else why not, as a clause. Asynchronous strategies always go
// on and need no `elastic`: for them it returns why the option does not apply.
std::string elastic_refusal(const StrategyOptions& options);
// Elastic synchronous training: "" when the survivors can go on at every group size a run may pass
// through, from `smallest` to `largest` workers (min_workers to the run's workers, or max_workers
// in a run that may grow), else a warning naming the sizes they cannot (the registration's
// elastic_group check) and why: a loss that leaves such a group ends the run (exit code 5).
std::string elastic_group_warning(const StrategyOptions& options, int smallest, int largest);

// What Worker::regroup_survivors() agreed on, the same on every survivor.
struct Regrouping {
  std::vector<int> members;  // the new group, in rank order
  std::vector<int> lost;     // the workers of the old group that are not in it
  int source = 0;            // the member whose state every member took
  std::int64_t steps = 0;    // the source's steps: every member's steps now
  std::uint32_t rounds = 0;  // agreement rounds of the run so far
  int agreements = 0;        // agreements this call took (more than 1: a loss during the regrouping)
  int stage = 0;             // the lowest `stage` a member called regroup_survivors() with
  int highest_stage = 0;     // and the highest
};

class Worker {
 public:
  // Collective (asynchronous strategies open windows). state must stay valid for the Worker's
  // lifetime. Throws InvalidArgument for bad options or
  // params/grads of different lengths.
  Worker(runtime::Context& ctx, const WorkerOptions& options, ModelState state);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // One training step on the gradient the framework just wrote into state.grads. Afterwards
  // state.grads holds what the strategy left there (Strategy::step may overwrite it: an aggregate,
  // or the scratch of an exchange), not the batch's gradient; the next step needs a new one.
  // A step that failed after its optimizer took the gradient and before the update (dpsgd's or
  // adpsgd's exchange: Strategy::take_gradient_first) leaves the Worker partway through it: step()
  // and save() then throw InvalidUsage saying so, until restore() sets a whole state again.
  StepReport step();
  // Collective: writes the representative model (per the strategy) into out. After finish() for
  // asynchronous strategies (InvalidUsage before it: their workers may still be stepping).
  void representative(std::span<float> out);
  // Strategy::representative_in_place for this worker's state (empty: use representative()).
  std::span<const float> representative_in_place() const;
  // Collective, once, after the last step: the strategy's finish() (stops its activities), then
  // closes the replica window. Idempotent. Asynchronous strategies first drop lost workers from
  // the communicator's group (Communicator::exclude_lost), so finish() and every collective after
  // it (representative(), evaluation) run among the survivors.
  void finish();
  // Asynchronous strategies only, not collective: writes the current representative model into
  // out (the strategy's own view, else the average of every worker's published replica) and
  // measures the consensus distance of the published replicas (of live workers only: lost ones
  // are skipped). InvalidUsage for synchronous strategies (use representative()).
  SnapshotResult snapshot(std::span<float> out);

  // Checkpoints: this worker's state, after its last step: the parameters ("params"), the
  // optimizer's state buffers ("optimizer.0", ...) and step count, the steps and skipped steps
  // taken. restore() puts a saved state back before the next step, so the run continues as if it
  // had not stopped (the strategy adopts the parameters: Strategy::restored). Not collective.
  // Every strategy, codec and dgc saves its own state (docs/faults.md has the table). InvalidUsage
  // for restore() after finish(); save() after finish() saves the final model (asynchronous
  // strategies: the model with every average that reached it). restore(): IoError naming `source`
  // when the checkpoint does not fit (another model or optimizer).
  Checkpoint save();
  void restore(const Checkpoint& checkpoint, std::string_view source);

  // This worker joins a run under way (Context::joins_run_under_way): the strategy takes a model
  // from a live peer (Strategy::rejoin), and the step count (the learning-rate schedule's clock)
  // starts at `step`, the run's progress. Not collective. InvalidUsage when rejoin_refusal()
  // refuses the strategy; PeerLost when no peer to take a model from is live.
  void rejoin(std::int64_t step);

  // Elastic synchronous training, collective among the survivors: every member of the group whose
  // step or collective failed with PeerLost calls it (a member whose collective failed later, or
  // not at all, joins it from its next watched wait). The survivors agree on the new group
  // (collective::agree_on_survivors), the Communicator regroups, and every member takes the state
  // (Worker::save: parameters, optimizer, step counts, the strategy's own) of the member that took
  // the most steps (the lowest rank among them): a step that some survivor completed stands, with
  // the lost worker's contribution; a step that none completed is taken again by the caller, among
  // the survivors. So every member leaves with the same bits. A loss during the regrouping starts
  // it again. `stage` (0 to kRegroupStages - 1) tells where the caller was: 0 in its steps, more
  // in the end of the run (training/run_end.hpp), whose stages before `stage` it completed; every
  // member learns the lowest (Regrouping::stage), from which all go on. InvalidUsage without an
  // elastic Communicator, after finish() or for a stage out of range; PeerLost when this worker is
  // lost itself.
  static constexpr int kRegroupStages = 8;
  Regrouping regroup_survivors(int stage = 0);
  // Collective among the members left: the group becomes the members not in `absent` (ascending),
  // without an agreement and without moving state, and the strategy regroups. For what every
  // member knows alike before its first collective (the vacant ranks of a run that may grow, from
  // the rendezvous's table). InvalidUsage without an elastic Communicator, after a step or when
  // `absent` holds this worker.
  void leave_out(const std::vector<int>& absent);
  // Elastic synchronous training, joins at a step boundary (the protocol: src/strategy/
  // worker_join.cpp). admit(): collective among the members, at the same step boundary on every
  // one (they agreed on `joiner`, a rank that is alive again and not a member: a new process took
  // it back, Context::joins_run_under_way on its side): every member sends the joiner the group,
  // the sequence number and the agreement round count, the first member (the source) its state
  // (save()), and each waits for the joiner's word, watching the joiner alone. Ready, or the joiner
  // lost without a word: the member regroups with the joiner and returns the new group. Abort (a
  // member, the source or another, was lost before the state arrived): the group stays as it is
  // and admit() returns nothing; that loss then fails the next collective and the survivors
  // regroup (regroup_survivors) as after any loss. join_group(): the joiner's side, from its
  // Communicator's joining mode: takes a header and the source's state, watching every member,
  // restores the state, sends every member its word, and after an abort waits for the next
  // admission; each wait is bounded by the loss of a peer it watches (the header: by the
  // operation time limit). Ends the joining mode, regroups and returns the new group (source: the
  // member whose state it took). InvalidArgument for a malformed header, state or word.
  // With fault_inject exit-while-admitting@RANK, member RANK (a process the run started with)
  // kills itself in admit() before it sends anything (a testing aid, docs/faults.md).
  std::optional<Regrouping> admit(int joiner);
  Regrouping join_group();
  // StrategyOptions::fault_inject, parsed (the checkpoint writer asks it about exit-while-checkpointing).
  const FaultInjection& fault_injection() const noexcept { return fault_; }

  // Bytes of this worker's training state: its replica's parameters and gradients, its optimizer's
  // state buffers where its strategy steps it (Strategy::steps_worker_optimizer), the copy of its replica it publishes
  // (asynchronous strategies without a replica_window()) and its strategy's state (Strategy::state_bytes). Thread-safe
  // as the strategy's state_bytes() is: sizes only, which change only at attach().
  std::size_t state_bytes() const;
  std::int64_t steps() const noexcept { return steps_; }
  std::int64_t skipped_steps() const noexcept { return skipped_; }
  double comm_seconds() const noexcept { return comm_seconds_; }
  const Strategy& strategy() const noexcept { return *strategy_; }
  collective::Communicator& communicator() noexcept { return comm_; }
  runtime::Context& context() noexcept { return comm_.context(); }

 private:
  // rejoin(): state_.params = the lowest live peer's published replica (replicas_); PeerLost when
  // none is live.
  void take_live_replica();

  // regroup_survivors(): the state of `source` (save(), encoded) broadcast to every member and
  // restored by the others.
  void take_state_of(int source);
  // The learning rate of the next step: the schedule's at steps_, times the group's share of the
  // workers the run started with under ElasticLr::linear.
  double next_lr() const;
  // InvalidUsage when a failed step left the optimizer holding a taken gradient (step() above).
  void check_not_partway(std::string_view call) const;
  // The strategy's step; in an elastic group, undone on PeerLost where the strategy may have
  // changed the state before failing (Strategy::changes_state_before_last_collective).
  StepOutcome strategy_step(double lr);

  collective::Communicator comm_;
  std::uint32_t membership_rounds_ = 0;  // collective::agree_on_survivors' round count
  ModelState state_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  optim::LrSchedule schedule_;
  std::unique_ptr<Strategy> strategy_;
  ElasticLr elastic_lr_;
  FaultInjection fault_;                          // StrategyOptions::fault_inject (none by default)
  core::LongLivedVector<float> published_;        // asynchronous, no replica_window(): params after the last step
  std::unique_ptr<collective::Window> replicas_;  // exposes published_
  bool finished_ = false;
  std::int64_t steps_ = 0;
  std::int64_t skipped_ = 0;
  double comm_seconds_ = 0;
};

}  // namespace fast::strategy
