// The schedule of asynchronous strategies (ps async/ssp, easgd, adpsgd, gosgd, acid).

#include <cmath>
#include <vector>

#include "fast/collective/window.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "worker_loop.hpp"

namespace fast::training {

// The workers share a budget of total_steps x workers batches, claimed one at a time from a
// counter on worker 0 (a fetch-and-add through the window "trainer.claims"), so fast workers take
// more steps than slow ones; each worker walks its own shard, epoch after epoch, and stops at its
// first claim past the budget. The worker whose claim crosses an evaluation point (every
// eval_interval_steps x workers batches, not the last) evaluates the current snapshot.
//
// Lost workers: a claim on a lost worker 0 ends the run with PeerLost naming the budget (nobody
// else holds it); any other lost worker just stops claiming. Worker::finish() then drops lost
// workers from the communicator's group, and the window closes among the survivors.
BudgetClaims run_asynchronous(WorkerLoop& loop) {
  runtime::Context& ctx = loop.context();
  strategy::Worker& worker = loop.worker();
  const LoopPlan& plan = loop.plan();
  const int workers = ctx.size();
  // A resumed run continues the budget where its checkpoint was (plan.first_step steps of each).
  std::vector<double> counter(1, ctx.rank() == 0 ? static_cast<double>(plan.first_step * workers) : 0.0);
  collective::Window claims(worker.communicator(), "trainer.claims", core::MutableView(std::span<double>(counter)));
  const double budget = static_cast<double>(plan.total_steps * workers);
  const double per_eval = static_cast<double>(plan.eval_interval_steps * workers);
  const std::vector<double> one{1.0};
  std::vector<double> before(1);
  BudgetClaims made;
  bool spent = false;  // this worker spent the budget (stop_on_divergence)
  if (worker.communicator().joining()) {
    // A new process that took a lost worker's rank back: it starts at the run's progress (the
    // budget claimed so far, in lockstep-equivalent steps) with a live neighbour's model.
    claims.get(0, core::MutableView(std::span<double>(before))).wait();
    const auto first = static_cast<std::int64_t>(before[0] / workers);
    worker.rejoin(first);
    worker.communicator().end_join();
    core::log(core::LogLevel::warn, "worker {} rejoined the run at step {} of {} (budget: {} of {} batches claimed)",
              ctx.rank(), first, plan.total_steps, static_cast<std::int64_t>(before[0]),
              static_cast<std::int64_t>(budget));
  }
  // Each worker walks its own shard from its own step count (0, a checkpoint's, or a rejoin's).
  for (std::int64_t s = worker.steps();; ++s) {
    try {
      claims
          .fetch_accumulate(0, core::ConstView(std::span<const double>(one)),
                            core::MutableView(std::span<double>(before)))
          .wait();
    } catch (const core::PeerLost& e) {
      if (ctx.alive(0)) throw;
      FAST_THROW(core::PeerLost,
                 "asynchronous training: worker 0, which holds the shared batch budget "
                 "(window 'trainer.claims'), was lost; the run cannot go on without it: {}",
                 e.what());
    }
    ++made.claims;
    const double claimed = before[0];  // batches claimed before this one
    if (claimed >= budget) break;
    const std::int64_t epoch = s / plan.steps_per_epoch;
    loop.train_step(epoch, s % plan.steps_per_epoch);
    // Periodic checkpoints: each worker every checkpoint_every of its own steps, without waiting
    // for the others (CheckpointStore::write_own; docs/faults.md).
    if (plan.checkpoint_every > 0 && worker.steps() % plan.checkpoint_every == 0) loop.checkpoint_own(worker.steps());
    const auto lockstep_done = static_cast<std::int64_t>((claimed + 1) / workers);
    loop.report_progress(lockstep_done, static_cast<std::int64_t>(claimed / workers) / plan.steps_per_epoch);
    if (std::floor((claimed + 1) / per_eval) > std::floor(claimed / per_eval) && claimed + 1 < budget)
      loop.evaluate_snapshot((claimed + 1) / workers);
    if ((loop.diverged_and_stopping() || loop.stop_requested_here()) && !spent) {
      // stop_on_divergence, SIGINT/SIGTERM: spend the rest of the budget at once, so every worker's
      // next claim ends it.
      const std::vector<double> rest{budget};
      claims
          .fetch_accumulate(0, core::ConstView(std::span<const double>(rest)),
                            core::MutableView(std::span<double>(before)))
          .wait();
      spent = true;
    }
  }
  // finish() first: it releases peers that wait on this worker's progress (ps ssp) before any
  // collective wait; the claims window closes after it, when nobody claims any more.
  loop.flush_train_record();
  loop.record_membership();
  worker.finish();
  claims.close();
  // close() stopped the service: the counter is this worker's own memory again.
  if (ctx.rank() == 0) made.counter = static_cast<std::int64_t>(counter[0]);
  return made;
}

}  // namespace fast::training
