#pragma once
// The end of one worker's run of `fast train`, after its schedule (run_lockstep or
// run_asynchronous): the final checkpoint, Worker::finish(), the final evaluation and the
// combination of the totals (run_totals.hpp), every collective of them in the same order on every
// member of the group.
//
// In an elastic lockstep run (LoopPlan::elastic) the end survives a loss, as the steps do
// (docs/faults.md, "Elastic synchronous training"): its stages are numbered after the steps'
// stage 0, and a stage that fails with PeerLost makes the survivors regroup
// (WorkerLoop::regroup_at with that stage). A survivor whose last step failed regroups from its
// steps at the same time (stage 0): it takes the state of one that completed it, and then every
// member starts the end again; otherwise all go on from the lowest stage a member was at, so that
// every member calls the same collectives. A barrier closes the end: a member leaves only once
// every member has every result (a member that left cannot take part in a regrouping). A
// regrouping at the barrier repeats no stage, records nothing and logs one line, unless a worker
// that reads the totals, or the first member (which writes the model file), is gone: then the
// others gather the totals again. Then Worker::finish(), after the final evaluation in an elastic
// run: an elastic strategy's finish leaves the parameters as its last step did (ps: a barrier and
// each member's server stopped; a PeerLost there is logged, the results being complete).
//
// An asynchronous run on a runtime that loses workers (RunEndInputs::runtime_loses_workers)
// survives a loss in its end the same way: its Communicator watches the group from the start of
// the end (Communicator::watch_members), and the survivors agree on the group with the stage each
// was at (collective::agree_on_survivors; no state to take: each keeps its own model). Elsewhere
// (threads, mpi, a lockstep run without `elastic`) a loss during the end ends the run with PeerLost.
//
// Torch-free. One call per worker, from its main activity.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fast/metrics/records.hpp"
#include "run_totals.hpp"
#include "worker_loop.hpp"

namespace fast::training {

struct RunEnd;

struct RunEndInputs {
  bool asynchronous = false;           // the strategy's schedule was run_asynchronous
  bool runtime_loses_workers = false;  // RuntimeBackend::loses_workers: the others go on after a loss
  // This worker's totals for the summary, after the final evaluation; `first_member`: this worker
  // is the group's first member (the summary reads the representative's norm and hash from it).
  std::function<WorkerTotals(bool first_member)> totals;
  // The workers that read the totals (summary_builders), among the group as it is when called.
  std::function<std::vector<int>()> readers;
  // Optional. Where the end closes with a barrier (an elastic run, an asynchronous one on a runtime
  // that loses workers), called on every member once the totals are gathered and BEFORE that barrier,
  // again after each gathering that a loss repeats: the summary's writer writes its file here, so
  // that no member leaves before it is written. A writer lost before the barrier makes the others
  // gather the totals again without it (docs/faults.md, "A loss while the run ends"); after it, the
  // file is written. It must throw nothing but PeerLost.
  std::function<void(const RunEnd&)> publish;
};

struct RunEnd {
  metrics::EvalRecord final_eval;   // the final evaluation (every worker holds the same)
  std::optional<RunTotals> totals;  // on the readers only
  std::string checkpoint_error;     // the final checkpoint's IoError message; "" when written or none due
  bool first_member = false;        // this worker was the group's first member when the totals were gathered
  bool published = false;           // RunEndInputs::publish was called with the totals as they are here
};

// Errors: PeerLost as above; the evaluation's and the gather's others. A final checkpoint that
// cannot be written (IoError) is logged by the leading worker and kept in checkpoint_error: the
// trained model is not lost to a folder that cannot be written, the evaluation and the summary follow.
RunEnd end_run(WorkerLoop& loop, const RunEndInputs& in);

}  // namespace fast::training
