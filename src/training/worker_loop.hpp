#pragma once
// WorkerLoop: one worker's side of `fast train` between its set-up (trainer.cpp) and the end of
// the run (run_totals.hpp): the training step, the `train` and `eval` records, the progress
// reports and the evaluations this worker makes, and its own totals. The two schedules that drive
// it are free functions in their own files:
//
//   run_lockstep       (lockstep_loop.cpp)  synchronous strategies: every worker takes
//                                           total_steps steps; evaluations are collective
//   run_asynchronous   (async_loop.cpp)     asynchronous strategies: a shared batch budget claimed
//                                           one batch at a time; snapshot evaluations
//
// Torch-free: the model is reached through ModelSide (implemented in trainer.cpp), so these files
// compile without libtorch. One per worker, used by that worker's main activity only; its only
// link to other workers of its process is ProcessOutputs (output only).

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "checkpoint_store.hpp"
#include "fast/core/error.hpp"
#include "fast/metrics/divergence.hpp"
#include "fast/metrics/records.hpp"
#include "fast/runtime/context.hpp"
#include "fast/runtime/slowdown.hpp"
#include "fast/strategy/worker.hpp"
#include "process_outputs.hpp"
#include "run_totals.hpp"

namespace fast::training {

// The libtorch side of one worker, as the loops see it.
class ModelSide {
 public:
  virtual ~ModelSide() = default;
  // zero grads, forward, cross-entropy, backward on batch (epoch, index) of this worker's shard;
  // returns the loss. The gradient is left in the replica's flat buffer for Worker::step().
  virtual double gradient(std::int64_t epoch, std::int64_t index) = 0;
  // Whether gradient() touches only this worker's own objects (its model, replica and loader) and
  // shared read-only data: it may then run on another OS thread while other workers' code runs
  // (Context::compute_overlapped). False when the model draws from libtorch's process-wide
  // random generator (ModelRegistration::draws_random, TorchScript files).
  virtual bool gradient_is_private() const = 0;
  // Evaluator::run (collective) / Evaluator::snapshot_round (not collective), the score fields of
  // the record filled (accuracy, loss, samples, consensus distance, replica accuracies and rank).
  virtual metrics::EvalRecord evaluate(bool final_round) = 0;
  virtual metrics::EvalRecord snapshot() = 0;
  // The representative model of the final evaluate() (a mid-run round's is not kept).
  virtual std::span<const float> representative() const = 0;
  // After every Worker::step(): the model's buffers per the `buffers` setting (BufferSync;
  // collective unless the policy is local).
  virtual void sync_buffers(collective::Communicator& comm) = 0;
};

// What every worker derives, identically, from the options and the world size.
struct LoopPlan {
  std::int64_t steps_per_epoch = 0;      // lockstep steps of all workers per pass over the data
  std::int64_t total_steps = 0;          // steps per worker (asynchronous: the budget / workers)
  std::int64_t eval_interval_steps = 0;  // evaluate every this many (lockstep) steps
  std::int64_t batch = 0;                // mini-batch per worker
  std::int64_t log_every = 0;            // a train record every this many steps
  double flops_per_step = 0;             // declared to the runtime after each gradient
  double initial_norm = 0;               // L2 norm of the initial model (divergence check)
  int classes = 10;                      // of the dataset: chance accuracy is 1 / classes
  bool stop_on_divergence = false;       // end the run early once it diverged
  std::int64_t first_step = 0;           // steps already taken (a resumed run: the checkpoint's step)
  bool resumed = false;                  // restored from a checkpoint (resume, or resume_if_present that found one)
  std::int64_t checkpoint_every =
      0;                   // a checkpoint every this many steps (asynchronous: of each worker's own; 0: none)
  bool stoppable = false;  // poll core::stop_requested() (fast train's SIGINT/SIGTERM)
  std::int64_t stop_check_every = 1;  // lockstep: a stop agreement after every step that is a multiple of this
  bool elastic = false;               // lockstep: the survivors of a lost worker regroup and go on (regroup_survivors)
  int min_workers = 1;  // elastic: a regrouping that leaves fewer members ends the run (below_min_workers)
};

class WorkerLoop {
 public:
  WorkerLoop(runtime::Context& ctx, strategy::Worker& worker, runtime::Slowdown& slowdown, ModelSide& model,
             ProcessOutputs& outputs, const LoopPlan& plan);

  runtime::Context& context() noexcept { return ctx_; }
  strategy::Worker& worker() noexcept { return worker_; }
  const LoopPlan& plan() const noexcept { return plan_; }
  // The run was resumed after `first_step` steps (a checkpoint restored after the loop was made:
  // Python's Metrics may be created before Worker.resume()): progress and rates count from it.
  void set_resumed(std::int64_t first_step) noexcept {
    plan_.first_step = first_step;
    plan_.resumed = true;
  }
  // Seconds on the runtime clock since this worker's loop started.
  double elapsed() const { return ctx_.now() - start_; }

  // One training step on batch (epoch, index): gradient, emulated slowness, Worker::step(), and a
  // train record every log_every steps.
  strategy::StepReport train_step(std::int64_t epoch, std::int64_t index);
  // The bookkeeping of train_step after Worker::step() (the divergence check, the losses, the train
  // record), for loops that take the gradient and the step themselves (the Python module).
  void record_step(double loss, const strategy::StepReport& report, std::int64_t epoch);
  // Writes a train record for the steps not yet reported, if any.
  void flush_train_record();
  // Progress of the whole run as `done` lockstep steps out of total_steps. Worker 0 only (others
  // return at once), about every 0.25 s and at the last step.
  void report_progress(std::int64_t done, std::int64_t epoch);
  // Worker 0 (others return at once): a `membership` record for each loss or rejoin the runtime
  // reported since the last call (Context::membership_events). Called with the progress reports
  // and once after training.
  void record_membership();
  // Elastic lockstep runs (plan.elastic), collective among the survivors: after a step or a
  // collective of the loop failed with `lost`, the survivors agree on a new group and take one
  // state (strategy::Worker::regroup_survivors); the first member writes a `membership` record for
  // each worker lost, with the step and the new group's size, and logs the change. Returns the
  // steps taken, where the loop goes on. Rethrows `lost` when this worker is lost itself or the
  // run is not elastic. A new group of fewer than plan.min_workers members is kept in
  // below_min_workers() (the same on every member: they agreed on the group), and the first
  // member logs that the run ends there.
  std::int64_t regroup_survivors(const core::PeerLost& lost);
  // After regroup_survivors(): a member of the new group had already left its steps (the run was
  // stopped at that step, and the loss failed the stop's agreement on some members only): the
  // lockstep loop ends there too, so that every member takes part in the end of the run.
  bool others_ended() const noexcept { return others_ended_; }
  // The two halves of regroup_survivors(), for the end of the run (run_end.hpp): the agreement,
  // with the stage this worker was at (strategy::Worker::regroup_survivors; rethrows `lost` as
  // above), and what follows it: the records, the log and the min_workers check, which applies
  // only to a group that has not taken every step yet.
  strategy::Regrouping regroup_at(const core::PeerLost& lost, int stage);
  void report_regrouping(const strategy::Regrouping& g, const core::PeerLost& lost);
  // The members left when a loss took the group below plan.min_workers (the lockstep loop then
  // ends at the steps regroup_survivors returned); 0 while it has not.
  int below_min_workers() const noexcept { return below_min_workers_; }
  // Elastic lockstep runs, joins at a step boundary. admit_joiners(): collective among the
  // members after `done` steps, every plan.stop_check_every steps (but the last): each member
  // proposes the lowest rank that is alive again without being a member (a new process took it
  // back under zmq), an all-gather of 8 bytes each; when every member proposes the same one, it is
  // admitted (strategy::Worker::admit) and the first member writes a `membership` record
  // (`joined`, with the step and the new size); nothing when the joiner called the admission off
  // (a member was lost before the state arrived: the next collective sees that loss).
  // join_group(): the joining worker's side before its first step (strategy::Worker::join_group);
  // returns the steps it goes on from.
  void admit_joiners(std::int64_t done);
  std::int64_t join_group();
  // Whether this worker leads the run's outputs: the first member of the group (worker 0 until it
  // is lost in an elastic run), or the worker set_lead_rank() named.
  bool lead() const;
  // After the group changed: this process leads (ProcessOutputs::set_lead) where the leading
  // worker (above) is one of its workers.
  void follow_lead();
  // Asynchronous runs: the worker that leads while the group keeps the lost workers (the batch
  // budget's host, which moves when its worker is lost); -1: the group's first member again. Then
  // follow_lead().
  void set_lead_rank(int rank);
  // The worker that leads: set_lead_rank()'s, else the group's first member.
  int leading_rank() const;

  // Collective evaluation after `step` steps; worker 0 writes the record and shows it (with
  // write = false, the caller does: write_evaluation()).
  metrics::EvalRecord evaluate_collective(std::int64_t step, bool final_round, bool write = true);
  // Every worker checks the record of an evaluation that began at `taken_at` (runtime clock) and
  // took `off_clock` seconds for divergence; the leading worker writes and shows it.
  void write_evaluation(const metrics::EvalRecord& record, double taken_at, double off_clock);
  // Asynchronous: this worker evaluates a snapshot after `rounds` lockstep-equivalent steps.
  void evaluate_snapshot(double rounds);

  // Lockstep, collective (every worker at the same step): the evaluation every eval_interval_steps
  // steps. With stop_on_divergence the workers then agree whether any one's divergence check has
  // latched (this evaluation's record included); true: the run stops at `step`, and the record is
  // not written (the final evaluation at the same step replaces it). The answer is kept in
  // stopped_for_divergence(), the same on every member.
  bool evaluate_periodic(std::int64_t step);
  bool stopped_for_divergence() const noexcept { return stopped_for_divergence_; }
  // Asynchronous: whether a stop (stop_on_divergence, SIGINT/SIGTERM) spent the run's batch budget
  // before this worker's last claim (run_asynchronous tells it).
  bool budget_spent() const noexcept { return budget_spent_; }
  void set_budget_spent() noexcept { budget_spent_ = true; }
  // Asynchronous, local: whether this worker's own check has latched and the run should stop.
  bool diverged_and_stopping() const noexcept { return plan_.stop_on_divergence && divergence_.diverged(); }
  const metrics::DivergenceCheck& divergence() const noexcept { return divergence_; }

  // Stop requests (core::stop_requested, plan.stoppable). Lockstep, called by every worker after
  // each step (`done` steps taken): whether to stop now. After each step that is a multiple of
  // plan.stop_check_every (but the last: the run ends there anyway), every member all-gathers the
  // signal it saw through the Communicator (8 bytes each), and all stop there if any saw SIGINT
  // or SIGTERM (SIGTERM wins). The steps of the agreements are fixed by the plan, so every member
  // calls the same collectives in the same order whatever the timing: no member can go on to a
  // step another has stopped before (with native collectives a mismatched call is undefined
  // behaviour in MPI), and the traffic, like bytes_sent, is the same in every run. A signal that
  // reaches any process stops the run. The signal is kept in stopped_by(). Errors: the
  // all-gather's (PeerLost, Timeout).
  bool stop_agreed(std::int64_t done);
  // Asynchronous, local: whether this worker was asked to stop (then kept in stopped_by()).
  bool stop_requested_here();
  // The signal that stopped this worker's loop (SIGINT, SIGTERM), 0 if none.
  int stopped_by() const noexcept { return stopped_by_; }
  // Lockstep, collective: a checkpoint after `done` steps when a store is set (set_checkpoints);
  // nothing otherwise. Remembers the folder written.
  // A checkpoint of the step last written is not written again, unless `again` (the end of an
  // elastic run after a regrouping: every member writes, so that the members call the same collectives).
  void set_checkpoints(CheckpointStore* store) noexcept { checkpoints_ = store; }
  void checkpoint(std::int64_t done, bool again = false);
  // Asynchronous, collective among the group, after Worker::finish(): a checkpoint of every
  // worker's final model (Worker::save) at the run's progress, all steps taken / workers (rounded
  // down), when a store is set. None, with a warning, when workers were lost: a resume needs every
  // worker's file.
  void checkpoint_asynchronous();
  // Asynchronous, not collective: a periodic checkpoint of this worker alone after its own `steps`
  // steps (CheckpointStore::write_own), when a store is set. Not remembered as last_checkpoint():
  // the folder is complete only once every worker wrote its file there.
  void checkpoint_own(std::int64_t steps);
  // The folder of the last checkpoint written, and its step (-1: none).
  const std::filesystem::path& last_checkpoint() const noexcept { return last_checkpoint_; }
  std::int64_t last_checkpoint_step() const noexcept { return last_checkpoint_step_; }

  // This worker's evaluations so far (for the time to target).
  std::span<const EvalEvent> evaluations() const noexcept { return evaluations_; }
  // This worker's totals now (claims, budget_counter, wall_seconds, param_* left at 0).
  WorkerTotals totals() const;

 private:
  void record_eval(metrics::EvalRecord record, double taken_at, double off_clock);
  // Adds the evaluation to evaluations() (the time to the target accuracy), without writing it.
  void count_eval(const metrics::EvalRecord& record, double taken_at, double off_clock);
  // evaluate_periodic()'s agreement: whether any worker's divergence check has latched (one
  // all-reduce; false without a collective when stop_on_divergence is not set).
  bool stop_for_divergence();
  void check(const std::optional<metrics::DivergenceSign>& sign);
  void write_train_record(std::int64_t steps, std::int64_t epoch, double lr);

  runtime::Context& ctx_;
  strategy::Worker& worker_;
  runtime::Slowdown& slowdown_;
  ModelSide& model_;
  ProcessOutputs& outputs_;
  LoopPlan plan_;
  double start_;
  double last_report_;
  double loss_sum_ = 0;  // since the last progress report
  std::int64_t loss_count_ = 0;
  double log_loss_sum_ = 0;  // since the last train record
  std::int64_t log_loss_count_ = 0;
  double last_lr_ = 0;
  std::vector<EvalEvent> evaluations_;
  metrics::DivergenceCheck divergence_;
  int stopped_by_ = 0;
  bool stopped_for_divergence_ = false;
  // Elastic lockstep: for each rank lost while this one was in the run, the steps its lost
  // processes had taken, summed: each from the step it held the rank from (0, or the step it was
  // admitted at) to the step the survivors went on from when they regrouped without it
  // (WorkerTotals::lost_steps).
  std::map<int, std::int64_t> lost_steps_;
  std::map<int, std::int64_t> held_since_;  // by rank: the step its process was admitted at (absent: 0)
  std::int64_t joined_at_ = 0;              // join_group(): the step this worker joined at (0: from the start)
  bool budget_spent_ = false;
  int below_min_workers_ = 0;
  bool others_ended_ = false;  // others_ended()
  CheckpointStore* checkpoints_ = nullptr;
  std::filesystem::path last_checkpoint_;
  std::int64_t last_checkpoint_step_ = -1;
  std::size_t membership_seen_ = 0;  // membership events already recorded
  int lead_rank_ = -1;               // set_lead_rank(); -1: the group's first member
};

void run_lockstep(WorkerLoop& loop);

// Claims this worker made on the shared budget, and its own counter's final value (the run's count
// on the budget's last host; 0 or about it elsewhere).
struct BudgetClaims {
  std::int64_t claims = 0;
  std::int64_t counter = 0;
};
// Runs the asynchronous schedule, then flushes the last train record, calls Worker::finish() and
// closes the budget window (see async_loop.cpp for the order).
BudgetClaims run_asynchronous(WorkerLoop& loop);

}  // namespace fast::training
