// The lockstep schedule of synchronous strategies (allreduce, local-sgd, dpsgd, ps sync).

#include "fast/core/error.hpp"
#include "worker_loop.hpp"

namespace fast::training {

namespace {

// Step s (0-based) and what follows it; true when the run stops there.
bool lockstep_step(WorkerLoop& loop, std::int64_t s) {
  const LoopPlan& plan = loop.plan();
  const std::int64_t epoch = s / plan.steps_per_epoch;
  loop.train_step(epoch, s % plan.steps_per_epoch);
  loop.report_progress(s + 1, epoch);
  // SIGINT/SIGTERM: decided together, before this step's evaluation, which the final evaluation at
  // the same step replaces.
  if (loop.stop_agreed(s + 1)) return true;
  if ((s + 1) % plan.eval_interval_steps == 0 && s + 1 < plan.total_steps) {
    if (loop.evaluate_periodic(s + 1)) return true;  // stop_on_divergence: decided together, at an evaluation
  }
  loop.admit_joiners(s + 1);                 // elastic: a worker taken back joins here
  if (plan.checkpoint_every > 0 && (s + 1) % plan.checkpoint_every == 0 && s + 1 < plan.total_steps)
    loop.checkpoint(s + 1);
  return false;
}

}  // namespace

// Every worker takes total_steps steps over its shard, epoch after epoch; every
// eval_interval_steps steps (but not at the last step: the final evaluation follows the loop) all
// workers evaluate together; with stop_on_divergence they stop after an evaluation at which some
// worker's divergence check had latched. A lost worker ends the run with its PeerLost (the strategy's),
// unless the run is elastic (plan.elastic): then the survivors regroup and go on, or end the run
// at the agreed step when fewer than plan.min_workers are left.
// A resumed run starts at plan.first_step (its data position: epoch and batch follow from the step).
// Stop requests are agreed on after a step (WorkerLoop::stop_agreed); checkpoints are written
// every checkpoint_every steps (not at the last: trainer.cpp writes the final one).
void run_lockstep(WorkerLoop& loop) {
  const LoopPlan& plan = loop.plan();
  // Elastic: a process that took a lost worker's rank back joins at the members' next step boundary.
  std::int64_t s = loop.worker().communicator().joining() ? loop.join_group() : plan.first_step;
  while (s < plan.total_steps) {
    try {
      if (lockstep_step(loop, s)) break;
      ++s;
    } catch (const core::PeerLost& lost) {
      // Elastic: the survivors regroup and go on from the steps they agreed on (what followed a
      // step that completed, such as its evaluation, is not taken again); otherwise rethrown.
      s = loop.regroup_survivors(lost);
      if (loop.below_min_workers() > 0) break;  // fewer than plan.min_workers left: the run ends here
      if (loop.others_ended()) break;           // a member is in the end of the run already: all end here
    }
  }
}

}  // namespace fast::training
