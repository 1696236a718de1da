#pragma once
// The runtimes built into this binary, by name. Each backend (runtime/threads, runtime/sim,
// runtime/zmq, ...) is its own CMake target behind an option (FAST_WITH_SIM, FAST_WITH_ZMQ) and
// contributes one entry; the list is generated at configure time from the enabled options
// (src/runtime/builtin_runtimes.cpp.in), so launch() picks a backend by name, never by an if-chain.

#include <span>
#include <string_view>

#include "fast/core/env.hpp"
#include "fast/runtime/detect.hpp"
#include "fast/runtime/launcher.hpp"

namespace fast::runtime {

struct RuntimeBackend {
  std::string_view name;         // LaunchOptions::runtime
  std::string_view description;  // one line, for --help and docs
  // Runs the local workers of a world (launch()'s contract); options are already validated for
  // the fields every runtime shares, `collectives` is resolved to "fast" or "native" and `windows`
  // to "rma" or "service".
  double (*launch)(const LaunchOptions& options, const WorkerFn& fn) = nullptr;
  // Checks this runtime's own settings (options.process, its environment variables, files they
  // name) without starting or logging anything, so that a mistake is refused before any data is
  // read; throws as launch() would. nullptr: nothing of its own to check.
  void (*check)(const LaunchOptions& options) = nullptr;
  // Whether it offers native collectives (LaunchOptions::collectives = "native").
  bool native_collectives = false;
  // Whether it offers one-sided memory (LaunchOptions::windows = "rma").
  bool remote_memory = false;
  // Whether its world is made of processes that a launcher starts (zmq, mpi): LaunchOptions::workers
  // is not its worker count, and a launcher's world of several processes needs such a runtime.
  bool multi_process = false;
  // Whether its clock is simulated (sim): launch() returns simulated seconds and every time a worker
  // reads is simulated; it takes a cluster file (LaunchOptions::cluster) describing the simulated
  // platform; a simulation holds process-wide state (one at a time per process); nothing it does
  // may depend on the host (signal handlers, wall-clock time), so that a seed gives the same run.
  bool simulated_clock = false;
  // Whether its workers can be lost while the others go on (sim: a failed host; zmq: a process that
  // dies), so that a run may tolerate it: asynchronous strategies, and synchronous ones with
  // `elastic` (docs/faults.md). threads cannot lose a worker; under mpi a dead rank ends the job.
  bool loses_workers = false;
  // Whether a process started during a run can take a rank in it (zmq: a lost rank back, or a
  // vacant one of a run that may grow, ProcessOptions::max_workers).
  bool takes_new_processes = false;
  // Whether its processes find each other through FAST's rendezvous and read LaunchOptions::process
  // (zmq): the rendezvous, world size, rank, keys, timeouts, transport, addresses and ports. The
  // others ignore those settings (mpi: the MPI launcher connects the ranks; threads, sim: one process).
  bool joins_by_rendezvous = false;
  // The environment variables it reads of its own (core/env.hpp), for --help and docs/config.md;
  // static storage. The variables every runtime reads are runtime_environment()'s.
  core::EnvTable environment;
  // The launchers whose environment it recognises (runtime/detect.hpp); static storage.
  std::span<const LauncherSignature> launchers;
};

// Every backend of this build, in a fixed order (threads first).
std::span<const RuntimeBackend> runtime_backends();
// The backend named `name`, or InvalidArgument listing the names of this build.
const RuntimeBackend& find_runtime(std::string_view name);

}  // namespace fast::runtime
