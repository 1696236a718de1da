#pragma once
// The `threads` runtime: N workers as N threads of one process. Messages move between in-memory
// mailboxes without serialisation: a send hands its view to the receiver, which copies (or adds)
// straight from the sender's memory, so a message is read once and written once.
//
// A World runs one worker function per rank and joins them. When a worker throws, the world is
// aborted: every blocked operation of the other workers throws RemoteError naming the failed
// worker, and run() rethrows the first error. Blocking operations are bounded by the operation
// time limit (TimeoutError).

#include <memory>

#include "fast/runtime/launcher.hpp"

namespace fast::runtime::threads {

struct WorldOptions {
  int size = 1;                    // number of workers, >= 1
  double op_timeout_seconds = -1;  // limit for a blocking operation; < 0: FAST_OP_TIMEOUT
};

class World {
 public:
  explicit World(WorldOptions options);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int size() const noexcept { return options_.size; }
  // Runs fn(ctx) on size() threads, one per rank; returns when all have returned (and all the
  // activities they spawned have ended). Rethrows the first worker error. May be called again.
  void run(const WorkerFn& fn);

 private:
  WorldOptions options_;
};

}  // namespace fast::runtime::threads
