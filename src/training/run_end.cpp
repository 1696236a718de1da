#include "run_end.hpp"

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/strategy/aggregate.hpp"

namespace fast::training {

namespace {

// The stages of the end, after the steps' stage 0 (strategy::Worker::regroup_survivors).
enum Stage : int { kCheckpoint = 1, kEvaluation = 2, kTotals = 3, kBarrier = 4 };
static_assert(kBarrier < strategy::Worker::kRegroupStages);

// The final checkpoint; "" or its IoError's message (see end_run()). `again`: write it even when
// the loop wrote that step (an elastic run: every member calls the same collectives).
std::string final_checkpoint(WorkerLoop& loop, bool asynchronous, bool again) {
  try {
    if (asynchronous)
      loop.checkpoint_asynchronous();
    else
      loop.checkpoint(loop.worker().steps(), again);
    return "";
  } catch (const core::IoError& e) {
    if (loop.lead())
      core::log(core::LogLevel::error,
                "checkpoint: the final checkpoint was not written: {}; lost: the state to resume from. The final "
                "evaluation and the summary follow",
                e.what());
    return e.what();
  }
}

// The step the final evaluation is at: where a lockstep run stopped early (a signal, a loss below
// min_workers), else the run's last.
std::int64_t final_step(WorkerLoop& loop, bool asynchronous) {
  const bool ended_early = loop.stopped_by() != 0 || loop.below_min_workers() > 0;
  return !asynchronous && ended_early ? loop.worker().steps() : loop.plan().total_steps;
}

}  // namespace

RunEnd end_run(WorkerLoop& loop, const RunEndInputs& in) {
  strategy::Worker& worker = loop.worker();
  runtime::Context& ctx = loop.context();
  const bool elastic = loop.plan().elastic && !in.asynchronous;
  RunEnd out;
  bool evaluation_written = false;
  int from = kCheckpoint;
  for (;;) {
    int stage = from;
    try {
      if (stage <= kCheckpoint) {
        stage = kCheckpoint;
        out.checkpoint_error = final_checkpoint(loop, in.asynchronous, elastic);
      }
      // Elastic: after the barrier (a member regroups only before its finish()).
      if (!elastic) worker.finish();
      if (stage <= kEvaluation) {
        stage = kEvaluation;
        const double taken_at = ctx.now();
        out.final_eval = loop.evaluate_collective(final_step(loop, in.asynchronous), true, false);
        // Once, before the totals, which carry the leading worker's evaluations.
        if (!evaluation_written) loop.write_evaluation(out.final_eval, taken_at, ctx.now() - taken_at);
        evaluation_written = true;
        if (worker.fault_injection().exits_while_ending(ctx.rank()) && !ctx.joins_run_under_way())
          strategy::FaultInjection::kill_process(
              fmt::format("worker {} kills itself at the end of the run, after the final evaluation and before it "
                          "sends its totals (exit-while-ending)",
                          ctx.rank()));
      }
      if (stage <= kTotals) {
        stage = kTotals;
        collective::Communicator& comm = worker.communicator();
        const WorkerTotals mine = in.totals(ctx.rank() == comm.members().front());
        out.totals = gather_totals(comm, mine, loop.evaluations(), in.readers());
      }
      if (elastic) {
        stage = kBarrier;
        worker.communicator().barrier();
      }
      break;
    } catch (const core::PeerLost& lost) {
      if (!elastic) throw;
      loop.regroup_survivors(lost, stage, kBarrier);  // rethrows when this worker is the one lost
      // Stage 0: a member was in its last step; it took a state that completed it and starts the end.
      from = loop.regrouped_stage() == 0 ? kCheckpoint : loop.regrouped_stage();
      if (from == kBarrier) break;  // every member had every result
      if (from <= kTotals) out.totals.reset();
    }
  }
  if (elastic) {
    try {
      worker.finish();
    } catch (const core::PeerLost& e) {
      core::log(core::LogLevel::debug, "elastic: worker {}: a loss while the run ended: {}", ctx.rank(), e.what());
    }
  }
  return out;
}

}  // namespace fast::training
