#include "run_end.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fast/collective/membership.hpp"

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

// The survivors of an asynchronous run's end agree on the group (see run_end.hpp); returns the
// lowest stage a member was at. Rethrows `lost` when this worker is the one lost.
int regroup_asynchronous(WorkerLoop& loop, const core::PeerLost& lost, int stage, std::uint32_t& rounds) {
  collective::Communicator& comm = loop.worker().communicator();
  if (!comm.own_context().alive(comm.rank())) throw lost;
  const collective::SurvivorAgreement a = collective::agree_on_survivors(comm, stage, rounds);
  comm.regroup(a.members, a.next_sequence);
  loop.follow_lead();
  const int from = static_cast<int>(*std::ranges::min_element(a.progress));
  if (loop.lead() && from == kBarrier)
    core::log(core::LogLevel::info,
              "asynchronous training: worker(s) {} ended their run or were lost while it ended, once every worker "
              "had its results ({})",
              fmt::join(a.lost, ", "), lost.what());
  else if (loop.lead())
    core::log(core::LogLevel::warn,
              "asynchronous training: worker(s) {} lost while the run ended; {} workers end it ({})",
              fmt::join(a.lost, ", "), a.members.size(), lost.what());
  return from;
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
  // An asynchronous run's survivors regroup where the runtime lets them go on without a worker.
  const bool asynchronous_regroups = in.asynchronous && in.runtime_loses_workers;
  if (asynchronous_regroups) worker.communicator().watch_members();
  std::uint32_t rounds = 0;  // agreement rounds (none before the end in an asynchronous run)
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
        out.first_member = ctx.rank() == comm.members().front();
        const WorkerTotals mine = in.totals(out.first_member);
        out.totals = gather_totals(comm, mine, loop.evaluations(), in.readers());
      }
      if (elastic || asynchronous_regroups) {
        stage = kBarrier;
        worker.communicator().barrier();
      }
      break;
    } catch (const core::PeerLost& lost) {
      if (asynchronous_regroups) {
        from = regroup_asynchronous(loop, lost, stage, rounds);
      } else {
        if (!elastic) throw;
        loop.regroup_survivors(lost, stage, kBarrier);  // rethrows when this worker is the one lost
        // Stage 0: a member was in its last step; it took a state that completed it and starts the end.
        from = loop.regrouped_stage() == 0 ? kCheckpoint : loop.regrouped_stage();
      }
      if (from == kBarrier) break;  // every member had every result
      if (from <= kTotals) out.totals.reset();
    }
  }
  if (in.asynchronous) loop.record_membership();  // losses in the end that the runtime reported
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
