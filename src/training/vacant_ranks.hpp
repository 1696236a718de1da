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

// Whether `worker`'s rank was vacant when the run started (taken since or not).
bool started_vacant(const runtime::Context& ctx, int worker);

// An elastic run that starts with vacant ranks: the starting workers agree on their group without
// them (the agreement of a loss, Worker::regroup_survivors at step 0, before any other collective)
// and log the group once (worker 0). Nothing when no rank is vacant or this worker joins a run
// under way (the group admits it). InvalidArgument when the starting workers are fewer than
// min_workers (the run could never start); PeerLost when this worker itself is lost meanwhile.
void leave_out_vacant_ranks(runtime::Context& ctx, strategy::Worker& worker, int min_workers);

}  // namespace fast::training
