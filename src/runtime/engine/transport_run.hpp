#pragma once
// The run of a transport backend's local workers (zmq, mpi: the backends that plug a Transport into
// the engine), written once: what happens from the transport's start to the end of the
// world, and which error the launch ends with (runtime/launcher.hpp, launch()'s contract).
//
//  1. start(on_lost): the backend starts its transport, which calls on_lost(reason) when it finds a
//     peer lost. A run that tolerates lost workers (asynchronous strategies) goes on; any other
//     ends: every local worker is aborted with that reason, and the launch ends with PeerLost
//     naming the first loss, unless a local worker failed by its own code (step 4).
//  2. The local workers run fn (LocalWorld::run, `on_failure` as there); the wall time is timed.
//  3. finish(errors): the backend drains and stops its transport, knowing how the workers ended.
//  4. Then a local worker's own failure (detail::own_failure: not a RemoteError, PeerLost,
//     TimeoutError or NotAdmitted), else a local worker's TimeoutError when it came before any
//     loss was reported (an operation past op_timeout: the peers it told fail, and their failure
//     comes back as a loss), else PeerLost (step 1), else the workers' root-cause error
//     (detail::rethrow_root_cause), else the seconds of step 2.
//
// Thread-safety: called once per launch, by the launching thread; on_lost may be called from the
// transport's threads at any time before finish returns.

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "local_world.hpp"

namespace fast::runtime::engine {

using LossFn = std::function<void(const std::string& reason)>;

struct TransportRun {
  bool tolerate_lost = false;
  std::function<void(const LossFn& on_lost)> start;
  LocalWorld::FailureFn on_failure;  // may be empty
  std::function<void(const std::vector<std::exception_ptr>& errors)> finish;
};

double run_over_transport(LocalWorld& world, const WorkerFn& fn, const TransportRun& run);

}  // namespace fast::runtime::engine
