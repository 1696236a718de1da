#pragma once
// The rule by which the survivors of an asynchronous run hand on what one worker held for all (the
// training loop's batch budget, easgd's centre, a ps server's shard) when that worker is lost.

#include "fast/runtime/context.hpp"

namespace fast::runtime {

// The first rank after `holder`, counting up and wrapping past the last rank to 0, that is alive
// and was never lost (lost_since(ctx, rank, 0) false: a rank that a new process took back is
// passed over, since what it held went with the old process); -1 when there is none. Survivors
// that saw the same losses get the same answer; a new process in a lost one's place does not know
// the losses from before it came, so it must not act on its answer alone.
// Thread-safety: as Context::alive and Context::membership_events.
int successor(const Context& ctx, int holder);

}  // namespace fast::runtime
