#pragma once
// Starting a world of workers by runtime name. A launcher runs fn once per worker, each with its
// own Context, and returns when all returned. If a worker throws, the others are released from
// their waits (RemoteError) and the first error is rethrown by launch().

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fast/runtime/context.hpp"

namespace fast::runtime {

using WorkerFn = std::function<void(Context&)>;

struct LaunchOptions {
  std::string runtime = "threads";  // one of runtime_names()
  int workers = 1;                  // number of workers, >= 1
  double op_timeout_seconds = -1;   // blocking-operation limit; < 0: FAST_OP_TIMEOUT (sim: simulated seconds)
  std::filesystem::path cluster;    // sim: cluster file (.toml or SimGrid .xml, docs/clusters.md);
                                    // empty: default_cluster(workers). Other runtimes: must be empty.
  // Whether the workers can go on without a worker lost with its host (asynchronous strategies).
  // false: losing a worker ends the run at once with its PeerLost. true: the lost worker's end is
  // not the run's error; launch() returns normally once every other worker returned. Only the sim
  // runtime loses workers; the others ignore this.
  bool tolerate_lost_workers = false;
};

// Names accepted by LaunchOptions::runtime in this build.
std::vector<std::string> runtime_names();

// Runs fn on every worker of a new world. Throws InvalidArgument for an unknown runtime (listing
// the allowed names), a bad worker count or a cluster file given to a runtime other than sim.
// Returns the seconds the run took on the runtime's clock (simulated under sim).
double launch(const LaunchOptions& options, const WorkerFn& fn);

}  // namespace fast::runtime
