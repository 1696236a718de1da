#include "fast/runtime/sim/world.hpp"

#include <array>
#include <csignal>
#include <optional>

#include <xbt/log.h>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <xbt/config.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../deliver.hpp"
#include "../interrupt_slot.hpp"
#include "compute_pool.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/runtime/environment.hpp"
#include "platform.hpp"
#include "sim_context.hpp"
#include "sim_sync.hpp"
#include "world_state.hpp"

namespace fast::runtime::sim {

namespace sg = simgrid::s4u;

namespace {

// SimGrid settings that can be set only once per process: applied on the first run; a later run
// asking for another network model is refused.
void configure_engine(const std::string& model) {
  static std::string configured_model;
  if (!configured_model.empty()) {
    FAST_ENFORCE_AS(core::InvalidUsage, configured_model == model,
                    "sim: the network model is {} for this process (SimGrid fixes it on first use), got {}",
                    configured_model, model);
    return;
  }
  xbt_log_control_set("root.thresh:critical");
  sg::Engine::set_config("network/model:" + model);
  // No reverse (acknowledgement) traffic: a message of B bytes over a path of latency L and
  // bottleneck bandwidth W takes L + B / W under CM02 (docs/simulation.md).
  sg::Engine::set_config("network/crosstraffic:0");
  configured_model = model;
}

// The callbacks connected to SimGrid's process-wide signal `on_platform_created` while one engine
// exists, disconnected when this guard ends (after the engine, declared before it). SimGrid 3.32's
// engine connects one capturing itself (its presolve) and never disconnects it: once the engine is
// gone, the next platform file parsed in this process fired it into freed memory (a crash).
class PlatformSignalSlots {
 public:
  PlatformSignalSlots() : first_(sg::Engine::on_platform_created.connect([] {})) {}
  ~PlatformSignalSlots() {
    const unsigned int last = sg::Engine::on_platform_created.connect([] {});
    for (unsigned int id = first_; id <= last; ++id) sg::Engine::on_platform_created.disconnect(id);
  }
  PlatformSignalSlots(const PlatformSignalSlots&) = delete;
  PlatformSignalSlots& operator=(const PlatformSignalSlots&) = delete;

 private:
  unsigned int first_;  // a no-op of this guard's, connected before the engine's
};

// SimGrid's context factory. raw: every actor on the one OS thread that runs the engine, with a
// stack of its own (8 MiB, mapped lazily), switched at each simcall by a few instructions; at
// hundreds of workers it runs an epoch markedly faster than one OS thread per actor
// (docs/simulation.md, "Scale").
// Sound for FAST's workers: they yield only inside runtime calls, never inside a libtorch call, so
// libtorch's thread-local state (grad mode, the autograd engine's) is never seen half-way by another
// actor, and one OpenMP team serves them all. thread: one OS thread per actor, for worker code that
// keeps per-thread state across runtime calls (Python) and under sanitizers, which report swapped
// stacks as overflows (ASan) or races (TSan).
const char* context_factory(const WorldOptions& options) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  (void)options;
  return "thread";
#else
  return options.thread_per_actor ? "thread" : "raw";
#endif
}

// SimGrid's clock goes on from one simulation of a process to the next, and it starts a host's
// speed profile (a cluster's [[speed_profiles]] and straggler draws) at its time 0: in a later
// simulation of the process those changes lie in the past, and SimGrid then never ends the run (it
// reports a deadlock and the actors wait forever). Refused before anything starts.
void check_clock_for_profiles(const Cluster& cluster) {
  const bool stragglers = cluster.straggler_probability > 0 && cluster.straggler_factor > 1;
  if (sg::Engine::get_clock() <= 0 || (cluster.speed_profiles.empty() && !stragglers)) return;
  FAST_THROW(
      core::InvalidUsage,
      "sim: cluster '{}' has {}, which SimGrid starts at its time 0, and this process ran a simulation "
      "before (SimGrid's clock is at {:.6g} s and does not go back): run this simulation in a process of its "
      "own (as fast train and each sim run of fast compare do), or on a cluster without them",
      cluster.name.empty() ? std::string("(built in)") : cluster.name,
      stragglers ? (cluster.speed_profiles.empty() ? "stragglers" : "speed profiles and stragglers") : "speed profiles",
      sg::Engine::get_clock());
}

}  // namespace

World::World(WorldOptions options) : options_(std::move(options)) {
  FAST_ENFORCE(options_.size >= 1, "sim World: expected at least 1 worker, got {}", options_.size);
  if (options_.op_timeout_seconds < 0)
    options_.op_timeout_seconds = core::env_number(runtime_environment(), "FAST_OP_TIMEOUT");
  FAST_ENFORCE(options_.op_timeout_seconds > 0, "sim World: operation time limit must be positive, got {} s",
               options_.op_timeout_seconds);
}

double World::run(const WorkerFn& fn) {
  FAST_ENFORCE_AS(core::InvalidUsage, !sg::Engine::has_instance(),
                  "sim World: another simulation is running in this process");
  const Cluster& cluster = options_.cluster;
  check_clock_for_profiles(cluster);
  const int n = options_.size;
  // The factory is read when the engine is built, so it goes on the engine's command line
  // (set_config afterwards is too late).
  std::string program = "fast", factory = std::string("--cfg=contexts/factory:") + context_factory(options_);
  std::array<char*, 3> argv{program.data(), factory.data(), nullptr};
  int argc = 2;
  const PlatformSignalSlots platform_slots;
  // SimGrid's engine sets its own SIGINT handler, which exits with 1 while the actors' threads
  // run (a crash at times). The process's own disposition comes back: at its default action (fast
  // train under sim) a SIGINT ends the simulation at once, killed by the signal (130 in a shell), as
  // a SIGTERM does (143); a handler of the program's (the Python binding's) runs, and may end the
  // simulation through interrupt_launches (below).
  struct sigaction before_engine {};
  const bool have_sigint = ::sigaction(SIGINT, nullptr, &before_engine) == 0;
  xbt_log_control_set("root.thresh:critical");  // before the engine, which logs the factory it is given
  sg::Engine engine(&argc, argv.data());
  if (have_sigint) ::sigaction(SIGINT, &before_engine, nullptr);
  configure_engine(cluster.model);
  const std::vector<sg::Host*> hosts = build_platform(cluster);
  std::vector<sg::Host*> placement;
  for (int r = 0; r < n; ++r) placement.push_back(hosts[static_cast<std::size_t>(r) % hosts.size()]);
  const double start = sg::Engine::get_clock();
  WorldState state(placement, options_.op_timeout_seconds, start);
  state.set_memory_bandwidth(cluster.memory_bandwidth);
  // runtime::interrupt_launches: the workers' next runtime calls end the run (destroyed before `state`).
  const InterruptSlot interrupt_slot([&state](const std::string& message) { state.request_interrupt(message); });
  // Destroyed before `state`, once every actor has ended (each waits for its own computations, so
  // the queue is empty by then).
  std::optional<ComputePool> pool;
  const int threads = compute_threads(options_.compute_threads, n);
  if (threads > 1) {
    pool.emplace(threads);
    state.set_compute_pool(&*pool);
  }
  core::log(core::LogLevel::info, "sim: workers' computations on {} {}", threads,
            threads > 1 ? "threads, during their simulated executions (sim_threads)"
                        : "thread, in turn on the simulation's thread (sim_threads)");
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<bool> ended(static_cast<std::size_t>(n), false);

  for (int r = 0; r < n; ++r) {
    sg::Actor::create(fmt::format("worker-{}", r), placement[static_cast<std::size_t>(r)], [&, r] {
      start_actor_exceptions();
      const auto i = static_cast<std::size_t>(r);
      try {
        SimContext ctx(r, state);
        fn(ctx);
        state.end(r);
      } catch (const std::exception& e) {
        ended[i] = true;
        if (state.lost(r)) {
          // Lost with its host: it stopped at its first runtime call after the failure.
          errors[i] = std::make_exception_ptr(core::PeerLost(state.lost_message(r)));
          return;
        }
        errors[i] = std::current_exception();
        state.abort(r, e.what());
        return;
      }
      ended[i] = true;
    });
  }
  // Failures: an actor marks the failing host's workers lost: their computations are cancelled
  // and their waits woken, so their activities throw PeerLost and end by unwinding normally (not
  // by SimGrid's actor kill, which would unwind them through RAII locks whose unlock is a simcall
  // a dying actor may not make); peers get PeerLost for any operation with them. The host itself
  // stays on: messages the lost workers sent before the failure still arrive.
  for (std::size_t k = 0; k < cluster.failures.size(); ++k) {
    const ClusterFailure f = cluster.failures[k];
    sg::Host* host = hosts[static_cast<std::size_t>(f.host)];
    const bool tolerate = options_.tolerate_lost;
    sg::Host* where = hosts[(static_cast<std::size_t>(f.host) + 1) % hosts.size()];  // any host
    // A daemon: the simulation ends with the workers, not at a failure timed after them (whose
    // sleep would otherwise lengthen the run's simulated time to it).
    sg::Actor::create(fmt::format("failure-{}", k), where, [&state, &placement, host, f, start, tolerate] {
      start_actor_exceptions();
      {
        KeepCaughtExceptions keep;
        sg::this_actor::sleep_until(start + f.off);
      }
      for (std::size_t r = 0; r < placement.size(); ++r) {
        if (placement[r] != host || state.lost(static_cast<int>(r))) continue;
        state.lose(static_cast<int>(r), fmt::format("host {} turned off", host->get_name()));
        // Not tolerated: the run cannot go on without the worker; release everybody at once.
        if (!tolerate) state.abort(static_cast<int>(r), state.lost_message(static_cast<int>(r)));
      }
    })->daemonize();
    // f.on (turned on again): its workers stay lost, so nothing changes for FAST.
  }
  try {
    KeepCaughtExceptions keep;  // the caller's, while the actors run on this thread
    engine.run();
  } catch (const simgrid::Exception& e) {
    FAST_THROW(core::Error, "sim: the simulation failed at {} s (simulated): {}", state.now(), e.what());
  }
  const double elapsed = state.now();

  std::vector<int> stuck;
  for (int r = 0; r < n; ++r)
    if (!ended[static_cast<std::size_t>(r)]) stuck.push_back(r);
  // Tolerated: a lost worker's end is not an error of the run.
  if (options_.tolerate_lost)
    for (int r = 0; r < n; ++r)
      if (state.lost(r)) errors[static_cast<std::size_t>(r)] = nullptr;
  detail::rethrow_root_cause(errors);
  FAST_ENFORCE_AS(core::TimeoutError, stuck.empty(),
                  "sim: deadlock at {} s (simulated): workers {} wait for each other and nothing else can happen",
                  elapsed, fmt::join(stuck, ", "));
  return elapsed;
}

}  // namespace fast::runtime::sim
