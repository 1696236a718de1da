#pragma once
// A run that may grow (max_workers, docs/faults.md "Growing a run"): under zmq the ranks past the
// starting processes' are vacant until a process joins in each. These are the trainer's two
// uses of that: the group leaves the vacant ranks out before any collective, and the summary
// names the ranks still vacant at the end apart from the workers lost. Torch-free.

#include <vector>

#include "fast/runtime/context.hpp"
#include "fast/strategy/worker.hpp"

namespace fast::training {

// The workers whose rank was vacant when the run started and that no process has taken since,
// as this worker's context saw it (MembershipEvent::vacant and joined), ascending.
std::vector<int> vacant_ranks(const runtime::Context& ctx);

// The workers whose rank was vacant when the run started, taken since or not, ascending.
std::vector<int> started_vacant(const runtime::Context& ctx);

// Whether the process that holds `worker`'s rank now is the first to hold it: the rank started
// vacant and one process took it.
bool first_holder(const runtime::Context& ctx, int worker);

// An elastic run that starts with vacant ranks: before any collective, the starting workers leave
// them out of their group (Worker::leave_out: every starting process read the same vacant ranks in
// the rendezvous's table, so no agreement is needed) and the first logs the group. A process that
// took a vacant rank already is left out too; it waits to be admitted at a step boundary. A
// starting worker lost meanwhile is found by the first collective, as any loss. Nothing when no
// rank started vacant or this worker joins a run under way. InvalidArgument when the starting
// workers are fewer than min_workers (the run could never start).
void leave_out_vacant_ranks(runtime::Context& ctx, strategy::Worker& worker, int min_workers);

}  // namespace fast::training
