// The schedule of asynchronous strategies (ps async/ssp, easgd, adpsgd, gosgd, acid).

#include <algorithm>
#include <cmath>
#include <vector>

#include "fast/collective/window.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/runtime/successor.hpp"
#include "worker_loop.hpp"

namespace fast::training {

namespace {

// The shared batch budget as one worker sees it: a counter in the window "trainer.claims", every
// worker exposing two (f64: the count, and how many survivors came to raise it), of which one
// worker's, the host's, counts the claims of the run. Worker 0 hosts it from the start. When the
// host is lost (a claim fails on it, or the runtime reported it lost before a claim), each survivor
// moves on to the lowest worker above it that is live and was never lost (runtime::successor: a
// rank taken back by a new process has a fresh counter, so it never hosts again). The first
// survivor to reach the new host (the second counter's fetch-and-add tells it) raises the count to
// what it saw at its own last claim, so that the batches claimed before the loss are not claimed
// again; the others leave it, so that the count is raised once. Approximate, within about a step
// of every worker: the batches claimed after that survivor's last claim and before the loss, and
// those claimed at the new host in the round trip before the raise, are trained twice. One per
// worker, used by its main activity only.
class BatchBudget {
 public:
  static constexpr std::size_t kRaisers = 1;  // the window offset of the second counter

  BatchBudget(runtime::Context& ctx, collective::Window& claims, double seen, WorkerLoop& loop)
      : ctx_(ctx), claims_(claims), seen_(seen), loop_(loop) {}

  // Adds `amount` to the counter; returns the count before it (the batches claimed before this
  // claim, run-wide). Moves to a new host as above when this one is lost. Errors: PeerLost when
  // this worker is the one lost, or when no live worker is left to host the budget.
  double claim(double amount) {
    for (;;) {
      try {
        if (runtime::ever_lost(ctx_, host_)) move_on("the runtime reported it lost");
        if (raise_) raise();
        std::vector<double> before(1);
        const std::vector<double> add{amount};
        claims_
            .fetch_accumulate(host_, core::ConstView(std::span<const double>(add)),
                              core::MutableView(std::span<double>(before)))
            .wait();
        seen_ = before[0] + amount;
        return before[0];
      } catch (const core::PeerLost& e) {
        if (!runtime::ever_lost(ctx_, host_)) throw;
        move_on(e.what());
      }
    }
  }

  // A worker that took a lost rank back: the host is the live worker whose counter is the largest
  // (the others' stay at 0); returns that count. Not collective.
  double find_host() {
    double best = -1;
    for (int r = 0; r < ctx_.size(); ++r) {
      if (r == ctx_.rank() || !ctx_.alive(r)) continue;
      std::vector<double> value(1);
      try {
        claims_.get(r, core::MutableView(std::span<double>(value))).wait();
      } catch (const core::PeerLost&) {
        continue;  // lost meanwhile: it hosts nothing
      }
      if (value[0] > best) {
        best = value[0];
        host_ = r;
      }
    }
    FAST_ENFORCE_AS(core::PeerLost, best >= 0,
                    "asynchronous training: worker {} rejoins, but no other worker is live to tell how much of the "
                    "batch budget was claimed",
                    ctx_.rank());
    seen_ = best;
    loop_.set_lead_rank(host_);
    return best;
  }

  int host() const noexcept { return host_; }

 private:
  // The host was lost: the next candidate above it (see the class comment).
  void move_on(const std::string& why) {
    const int lost = host_;
    const int next = runtime::successor(ctx_, host_);
    FAST_ENFORCE_AS(core::PeerLost, next >= 0,
                    "asynchronous training: worker {}, which held the shared batch budget (window 'trainer.claims'), "
                    "was lost, and no live worker above it is left to hold it: {}",
                    lost, why);
    host_ = next;
    raise_ = true;
    loop_.set_lead_rank(host_);
    if (host_ == ctx_.rank())
      core::log(core::LogLevel::warn,
                "asynchronous training: worker {}, which held the shared batch budget, was lost; worker {} holds it "
                "from now on, from at least {} batches claimed",
                lost, host_, static_cast<std::int64_t>(seen_));
  }

  // The first survivor at the new host raises its count to seen_ (what this worker saw claimed),
  // if it is below; the others leave it.
  void raise() {
    const std::vector<double> one{1.0};
    std::vector<double> before(1);
    claims_
        .fetch_accumulate(host_, core::ConstView(std::span<const double>(one)),
                          core::MutableView(std::span<double>(before)), kRaisers)
        .wait();
    if (before[0] == 0) {
      std::vector<double> value(1);
      claims_.get(host_, core::MutableView(std::span<double>(value))).wait();
      if (value[0] < seen_) {
        const std::vector<double> add{seen_ - value[0]};
        claims_
            .fetch_accumulate(host_, core::ConstView(std::span<const double>(add)),
                              core::MutableView(std::span<double>(before)))
            .wait();
      }
    }
    raise_ = false;
  }

  runtime::Context& ctx_;
  collective::Window& claims_;
  int host_ = 0;
  double seen_;  // the count after this worker's last claim (or the resumed run's start)
  bool raise_ = false;
  WorkerLoop& loop_;
};

}  // namespace

// The workers share a budget of total_steps x workers batches, claimed one at a time from the
// counter of BatchBudget (worker 0's, or a survivor's once worker 0 was lost), so fast workers
// take more steps than slow ones; each worker walks its own shard, epoch after epoch, and stops
// at its first claim past the budget. The worker whose claim crosses an evaluation point (every
// eval_interval_steps x workers batches, not the last) evaluates the current snapshot. The
// budget's host leads the run's outputs (progress, membership records) while training.
//
// Lost workers stop claiming; Worker::finish() then drops them from the communicator's group, and
// the window closes among the survivors, whose first member leads from then on.
BudgetClaims run_asynchronous(WorkerLoop& loop) {
  runtime::Context& ctx = loop.context();
  strategy::Worker& worker = loop.worker();
  const LoopPlan& plan = loop.plan();
  const int workers = ctx.size();
  // A resumed run continues the budget where its checkpoint was (plan.first_step steps of each).
  const double start = static_cast<double>(plan.first_step * workers);
  std::vector<double> counter{ctx.rank() == 0 ? start : 0.0, 0.0};  // the count, the raisers (BatchBudget)
  collective::Window claims(worker.communicator(), "trainer.claims", core::MutableView(std::span<double>(counter)));
  BatchBudget shared(ctx, claims, start, loop);
  const double budget = static_cast<double>(plan.total_steps * workers);
  // A stop spends twice the budget at once: every later claim returns 2 x budget or more, which a
  // budget used up by steps never reaches (at most budget + one last claim per worker), so each
  // worker tells a run stopped early from one that ended.
  const double spend = 2 * budget;
  const double per_eval = static_cast<double>(plan.eval_interval_steps * workers);
  BudgetClaims made;
  bool spent = false;  // this worker spent the budget (stop_on_divergence)
  if (worker.communicator().joining()) {
    // A new process that took a lost worker's rank back: it starts at the run's progress (the
    // budget claimed so far, in lockstep-equivalent steps) with a live neighbour's model.
    const double claimed = shared.find_host();
    const auto first = static_cast<std::int64_t>(claimed / workers);
    worker.rejoin(first);
    worker.communicator().end_join();
    core::log(core::LogLevel::warn,
              "worker {} rejoined the run at step {} of {} (budget: {} of {} batches claimed, held by worker {})",
              ctx.rank(), first, plan.total_steps, static_cast<std::int64_t>(claimed),
              static_cast<std::int64_t>(budget), shared.host());
  }
  // Each worker walks its own shard from its own step count (0, a checkpoint's, or a rejoin's).
  for (std::int64_t s = worker.steps();; ++s) {
    const double claimed = shared.claim(1.0);  // batches claimed before this one
    ++made.claims;
    if (claimed >= budget) {
      if (claimed >= spend) loop.set_budget_spent();
      break;
    }
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
      // stop_on_divergence, SIGINT/SIGTERM: spend the budget at once, so every worker's next claim
      // ends it.
      (void)shared.claim(spend);
      spent = true;
    }
  }
  // finish() first: it releases peers that wait on this worker's progress (ps ssp) before any
  // collective wait; the claims window closes after it, when nobody claims any more.
  loop.flush_train_record();
  loop.record_membership();
  worker.finish();
  claims.close();
  loop.set_lead_rank(-1);  // the group's first member, now that the lost workers left it
  // close() stopped the service: the counter is this worker's own memory again (the host's holds
  // the run's count; the others' hold 0, or what a claim that raced a rejoin left there).
  // Without the spends (each worker stopped may have made one): the batches claimed.
  made.counter = static_cast<std::int64_t>(std::fmod(counter[0], spend));
  return made;
}

}  // namespace fast::training
