#pragma once
// The rule by which the survivors of an asynchronous run hand on what one worker held for all (the
// training loop's batch budget, easgd's centre, a ps server's shard) when that worker is lost.

#include "fast/runtime/context.hpp"

namespace fast::runtime {

// The first rank after `holder`, counting up and wrapping past the last rank to 0, that is alive
// and was never lost (ever_lost false: a rank that a new process took back is passed over, since
// what it held went with the old process); -1 when there is none. Processes that saw the same
// losses get the same answer; a new process in a lost one's place knows the losses from before it
// came, its own rank's included, from the rendezvous (MembershipEvent::before_join), so it agrees
// with the survivors on every loss the process that let it in had seen.
// Thread-safety: as Context::alive and Context::membership_events.
int successor(const Context& ctx, int holder);

}  // namespace fast::runtime
