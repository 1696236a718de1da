#include "run_end.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

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

// One worker's end of the run (end_run()): the stages in order, and the regrouping after a loss.
class RunEnding {
 public:
  RunEnding(WorkerLoop& loop, const RunEndInputs& in)
      : loop_(loop),
        in_(in),
        elastic_(loop.plan().elastic && !in.asynchronous),
        asynchronous_regroups_(in.asynchronous && in.runtime_loses_workers) {}

  RunEnd run() {
    // An asynchronous run's survivors regroup where the runtime lets them go on without a worker.
    if (asynchronous_regroups_) comm().watch_members();
    int from = kCheckpoint;
    for (;;) {
      int stage = from;
      try {
        run_stages(stage);
        break;
      } catch (const core::PeerLost& lost) {
        if (!elastic_ && !asynchronous_regroups_) throw;
        from = regroup(lost, stage);
        if (from == kBarrier) break;  // every member had every result
        if (from <= kTotals) out_.totals.reset();
      }
    }
    if (in_.asynchronous) loop_.record_membership();  // losses in the end that the runtime reported
    if (elastic_) finish_elastic();
    return std::move(out_);
  }

 private:
  collective::Communicator& comm() { return loop_.worker().communicator(); }

  // The stages from `stage` on; `stage` is left at the one under way when a loss interrupts it.
  void run_stages(int& stage) {
    if (stage <= kCheckpoint) {
      stage = kCheckpoint;
      out_.checkpoint_error = final_checkpoint();
    }
    if (!elastic_) loop_.worker().finish();  // elastic: after the barrier (regrouping needs an unfinished worker)
    if (stage <= kEvaluation) {
      stage = kEvaluation;
      evaluate();
    }
    if (stage <= kTotals) {
      stage = kTotals;
      out_.first_member = loop_.context().rank() == comm().members().front();
      readers_ = in_.readers();
      first_ = comm().members().front();
      out_.totals = gather_totals(comm(), in_.totals(out_.first_member), loop_.evaluations(), readers_);
    }
    if (elastic_ || asynchronous_regroups_) {
      // Before any member may leave: the summary's writer writes it now (RunEndInputs::publish).
      // Once the barrier completes on any member, every member passed here; a writer lost before
      // that is a loss at the barrier, after which the others gather the totals again (regroup()).
      if (in_.publish) {
        in_.publish(out_);
        out_.published = true;
      }
      stage = kBarrier;
      comm().barrier();
      runtime::Context& ctx = loop_.context();
      if (loop_.worker().fault_injection().exits_after_ending(ctx.rank()) && !ctx.joins_run_under_way())
        strategy::FaultInjection::kill_process(
            fmt::format("worker {} kills itself after the end's closing barrier, before its process writes its "
                        "outputs (exit-after-ending)",
                        ctx.rank()));
    }
  }

  // The final checkpoint; "" or its IoError's message (see end_run()). After a regrouping every
  // elastic member writes it, so that the members call the same collectives.
  std::string final_checkpoint() {
    try {
      if (in_.asynchronous)
        loop_.checkpoint_asynchronous();
      else
        loop_.checkpoint(loop_.worker().steps(), regrouped_);
      return "";
    } catch (const core::IoError& e) {
      const std::string what = core::user_message(e);  // it goes to the summary too
      if (loop_.lead())
        core::log(core::LogLevel::error,
                  "checkpoint: the final checkpoint was not written: {}; lost: the state to resume from. The final "
                  "evaluation and the summary follow",
                  what);
      return what;
    }
  }

  // The final evaluation, at the step where a run stopped early (lockstep: a signal, a loss below
  // min_workers, stop_on_divergence; asynchronous: a stop that spent the budget, at the leading
  // worker's own steps), else at the run's last; its record written once, before the totals, which
  // carry the leading worker's evaluations.
  void evaluate() {
    runtime::Context& ctx = loop_.context();
    const bool early = in_.asynchronous
                           ? loop_.budget_spent()
                           : loop_.stopped_by() != 0 || loop_.below_min_workers() > 0 || loop_.stopped_for_divergence();
    const double taken_at = ctx.now();
    out_.final_eval = loop_.evaluate_collective(early ? loop_.worker().steps() : loop_.plan().total_steps, true, false);
    if (!evaluation_written_) loop_.write_evaluation(out_.final_eval, taken_at, ctx.now() - taken_at);
    evaluation_written_ = true;
    if (loop_.worker().fault_injection().exits_while_ending(ctx.rank()) && !ctx.joins_run_under_way())
      strategy::FaultInjection::kill_process(
          fmt::format("worker {} kills itself at the end of the run, after the final evaluation and before it sends "
                      "its totals (exit-while-ending)",
                      ctx.rank()));
  }

  // The survivors agree on the group after `lost` interrupted `stage`; returns the stage they all
  // go on from. Rethrows `lost` when this worker is the one lost.
  int regroup(const core::PeerLost& lost, int stage) {
    const std::vector<int> before = comm().members();
    int from = 0;
    std::optional<strategy::Regrouping> regrouping;  // elastic
    if (asynchronous_regroups_) {
      if (!comm().own_context().alive(comm().rank())) throw lost;
      const collective::SurvivorAgreement a = collective::agree_on_survivors(comm(), stage, rounds_);
      comm().regroup(a.members, a.next_sequence);
      loop_.follow_lead();
      from = static_cast<int>(*std::ranges::min_element(a.progress));
    } else {
      regrouping = loop_.regroup_at(lost, stage);
      // Stage 0: a member was in its last step; it took a state that completed it and starts the end.
      from = std::max<int>(kCheckpoint, regrouping->stage);
      regrouped_ = true;
    }
    std::vector<int> gone;
    std::ranges::set_difference(before, comm().members(), std::back_inserter(gone));
    // At the barrier every member had every result, unless a worker that reads the totals (or the
    // first member, which writes the model) is gone: the others gather them again.
    if (from == kBarrier && std::ranges::any_of(gone, [&](int r) { return r == first_ || holds_totals(r); }))
      from = kTotals;
    if (from == kBarrier)
      log_ended(gone, lost);
    else if (regrouping)
      loop_.report_regrouping(*regrouping, lost);
    else if (loop_.lead())
      core::log(core::LogLevel::warn,
                "asynchronous training: worker(s) {} lost while the run ended; {} workers end it ({})",
                fmt::join(gone, ", "), comm().group_size(), lost.what());
    return from;
  }

  bool holds_totals(int rank) const { return std::ranges::find(readers_, rank) != readers_.end(); }

  // A regrouping at the barrier: nothing is recorded (the summary counts those workers among the
  // live ones; the agreement counts the members that already left as lost too).
  void log_ended(const std::vector<int>& gone, const core::PeerLost& lost) const {
    if (loop_.lead())
      core::log(core::LogLevel::info,
                "worker(s) {} ended their run or were lost while it ended, once every worker had its results ({})",
                fmt::join(gone, ", "), lost.what());
  }

  // Elastic: each member's finish() (ps stops its server) once every member had every result.
  void finish_elastic() {
    try {
      loop_.worker().finish();
    } catch (const core::PeerLost& e) {
      core::log(core::LogLevel::debug, "elastic: worker {}: a loss while the run ended: {}", loop_.context().rank(),
                e.what());
    }
  }

  WorkerLoop& loop_;
  const RunEndInputs& in_;
  const bool elastic_;                // an elastic lockstep run: Worker::regroup_survivors by stage
  const bool asynchronous_regroups_;  // an asynchronous run on a runtime that loses workers
  RunEnd out_;
  bool evaluation_written_ = false;
  bool regrouped_ = false;    // elastic: the group changed during the end
  std::uint32_t rounds_ = 0;  // asynchronous: agreement rounds (none before the end)
  std::vector<int> readers_;  // the totals' readers when they were last gathered
  int first_ = -1;            // the group's first member then
};

}  // namespace

RunEnd end_run(WorkerLoop& loop, const RunEndInputs& in) { return RunEnding(loop, in).run(); }

}  // namespace fast::training
