#pragma once
// The `sim` runtime: N workers as SimGrid actors on the simulated hosts of a Cluster. Training is
// real (the worker code runs unchanged, on real data); only time is simulated: compute(flops)
// executes on the worker's host, messages are transfers sized by their real byte count over the
// cluster's links, and now() is SimGrid's clock. Worker r runs on host r mod hosts. Runs are
// deterministic: the same cluster and worker code give the same simulated times.
//
// As in the threads runtime, a worker that throws aborts the world (the others' blocked operations
// throw RemoteError) and run() rethrows the first error, preferring root causes. A host turned off
// by a failure in the cluster loses its workers: their computations are cancelled, their waits
// woken, and their activities throw PeerLost from their next runtime call, so they end by
// unwinding normally (not by SimGrid's actor kill); operations of other workers with them throw
// PeerLost naming the worker, its host and the simulated time. What happens next depends on
// WorldOptions::tolerate_lost: false (the default), the loss aborts the world at once (every
// blocked operation of the other workers throws RemoteError) and run() throws the PeerLost of the
// lost worker; true, the other workers go on (Context::alive tells them who is gone) and run()
// returns normally when every other worker returned (a survivor's own error is still rethrown).
//
// One SimGrid engine exists at a time and the network model is fixed per process by the first
// run (SimGrid cannot change it later); runs in one process after the first keep SimGrid's clock
// running, so now() is measured from each run's start.

#include "fast/runtime/cluster.hpp"
#include "fast/runtime/launcher.hpp"

namespace fast::runtime::sim {

struct WorldOptions {
  int size = 1;                    // number of workers, >= 1
  double op_timeout_seconds = -1;  // limit of a blocking operation in simulated seconds; < 0: FAST_OP_TIMEOUT
  Cluster cluster;                 // the simulated machine; hosts == 0 ... see default_cluster
  bool tolerate_lost = false;      // a worker lost with its host is not the run's error (above)
  bool thread_per_actor = false;   // one OS thread per actor (LaunchOptions::thread_per_worker)
  int compute_threads = 0;         // LaunchOptions::sim_threads (0: the cores)
};

class World {
 public:
  explicit World(WorldOptions options);
  int size() const noexcept { return options_.size; }
  // Runs fn(ctx) on size() actors; returns when the simulation ends. Rethrows the first worker
  // error. Returns the simulated seconds the run took.
  double run(const WorkerFn& fn);

 private:
  WorldOptions options_;
};

}  // namespace fast::runtime::sim
