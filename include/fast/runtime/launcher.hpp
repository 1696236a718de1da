#pragma once
// Starting a world of workers by runtime name. A launcher runs fn once per worker of THIS process
// (all of them under threads and sim; this process's share under zmq and mpi), each with its own
// Context, and returns when all of them returned. If a worker throws, the others are released
// from their waits (RemoteError, or PeerLost on another process) and the first error is rethrown
// by launch(). Backends register themselves by name (runtime/registry.hpp); which ones exist
// depends on the build (runtime_names()).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "fast/runtime/context.hpp"

namespace fast::runtime {

using WorkerFn = std::function<void(Context&)>;

// The most processes a run that may grow (ProcessOptions::max_workers) can have: the rendezvous's
// table of every rank, and the answer to a process that joins, fit one hello message (about
// 400 bytes per process of a table, 64 KiB in all).
inline constexpr int kMaxGrowthProcesses = 128;

// How the processes of a multi-process run (runtime zmq) find and trust each other
// (docs/launch.md). Every field left at its default is taken from the FAST_* environment variable
// named beside it, which `fast launch` sets for the processes it starts.
struct ProcessOptions {
  std::string rendezvous;                  // HOST:PORT of the rendezvous (FAST_RENDEZVOUS); the process
                                           // that gets rank 0 serves it unless `fast rendezvous` does
  int world_size = 0;                      // processes in the run, >= 1 (FAST_WORLD_SIZE)
  int process_rank = -1;                   // this process's index in [0, world_size); -1: the rendezvous
                                           // assigns one in arrival order (FAST_PROCESS_RANK)
  int workers_per_process = 1;             // workers in each process; the world has world_size x this
  int max_workers = 0;                     // the most workers the run may grow to (--max-workers): its ranks
                                           // past world_size x workers_per_process start vacant, each taken by a
                                           // process that joins later (FAST_RESTARTED=1); 0: the starting ones
  std::filesystem::path key_file;          // this process's CURVE key pair (`fast keygen`; FAST_KEY_FILE)
  std::filesystem::path allow_file;        // public keys admitted, one per line (FAST_ALLOW_FILE)
  bool insecure = false;                   // no authentication, no encryption (FAST_INSECURE=1); warns
  double peer_timeout_seconds = -1;        // a peer silent this long is lost; < 0: FAST_PEER_TIMEOUT
  double rendezvous_timeout_seconds = -1;  // how long to wait for every process; < 0: FAST_RENDEZVOUS_TIMEOUT
  std::string transport;                   // "ipc" (one host), "tcp" or "" (FAST_TRANSPORT; default: ipc
                                           // when every process is on the rendezvous's host, else tcp)
  std::string host;                        // address this process binds and is reached at over tcp;
                                           // empty: FAST_HOST, else the address that reaches the rendezvous
  std::string advertise;                   // address given to peers when it differs from `host` (NAT,
                                           // containers); empty: FAST_ADVERTISE, else `host`
  std::string ports;                       // "LO-HI": every listening port inside it; empty: FAST_PORTS,
                                           // else any
  // The settings every process of the run must share, a JSON object of names and values (`fast
  // train`'s: settings::shared_settings); empty: none checked. zmq compares each process's with
  // the rendezvous server's, at the rendezvous and when a process joins a run under way; mpi every
  // rank's with rank 0's, before any worker starts. A process whose settings differ is refused with
  // InvalidArgument naming the first setting that differs and both values (settings_difference).
  std::string shared_settings;
};

// "" when the shared settings `mine` and `theirs` (ProcessOptions::shared_settings) agree, or
// either is empty; else the first setting, by name, whose values differ: "batch = 32 in <mine_name>,
// 64 in <theirs_name>" (a setting one lacks: "(none)").
std::string settings_difference(const std::string& mine, const std::string& mine_name, const std::string& theirs,
                                const std::string& theirs_name);

struct LaunchOptions {
  std::string runtime = "threads";  // one of runtime_names()
  int workers = 1;                  // threads, sim: number of workers, >= 1. zmq: ignored (the world
                                    // is process.world_size x process.workers_per_process)
  double op_timeout_seconds = -1;   // blocking-operation limit, > 0; -1: FAST_OP_TIMEOUT (sim: simulated seconds)
  std::filesystem::path cluster;    // sim: cluster file (.toml or SimGrid .xml, docs/clusters.md);
                                    // empty: default_cluster(workers). Other runtimes: must be empty.
  // Whether the workers can go on without a lost worker (asynchronous strategies). false: losing
  // a worker ends the run with its PeerLost. true: a lost worker's end is not the run's error;
  // launch() returns normally once every other local worker returned. Runtimes that can lose
  // workers: sim (host failures), zmq (dead or frozen processes).
  bool tolerate_lost_workers = false;
  ProcessOptions process;  // zmq only
  // Which collectives the Communicator uses: "fast" (its ring over point-to-point messages),
  // "native" (the runtime's own, Context::native_collectives: mpi only) or "" (FAST_COLLECTIVES,
  // else the runtime's default: native under mpi, fast elsewhere). "native" on a runtime without
  // native collectives is an InvalidArgument.
  std::string collectives;
  // Where one-sided windows (fast/collective/window.hpp) run: "rma" (the runtime's one-sided
  // memory, Context::remote_memory: MPI RMA under mpi), "service" (the owner's service activity
  // over point-to-point messages, every runtime) or "" (FAST_WINDOWS, else the runtime's default:
  // rma under mpi, service elsewhere). "rma" on a runtime without one-sided memory is an
  // InvalidArgument. Windows with a codec always use the service.
  std::string windows;
  // sim: whether each worker needs an OS thread of its own. false (the default): the actors take
  // turns on one OS thread, switching stacks at runtime calls (SimGrid's raw contexts: a switch
  // costs about as much as a function call). true: one OS thread per actor (SimGrid's thread
  // contexts, a kernel hand-over per switch), needed when worker code keeps per-thread state across
  // runtime calls, as a Python interpreter does. Builds with a sanitizer always use threads (the
  // sanitizers cannot follow swapped stacks). Other runtimes ignore it.
  bool thread_per_worker = false;
  // sim: OS threads that run the workers' real computations while their simulated executions run
  // (Context::compute_overlapped): 0, the cores this process may run on; at most one per worker.
  // 1 runs them in turn on SimGrid's thread. Results are the same for any value. Others ignore it.
  int sim_threads = 0;
  // Multi-process runtimes: called once in this process, on the calling thread, after the
  // processes met and before any worker starts, with the workers of every process on this machine,
  // this process's included. zmq: the processes of the rendezvous's table with this one's kernel
  // boot id (else host name), whatever their network namespace or container, vacant ranks not; the
  // count is the one of the meeting: a process that rejoins counts the lost ranks not yet taken
  // back as their table entries stand, and nobody counts again when the run grows. mpi: the ranks
  // of this one's MPI_COMM_TYPE_SHARED communicator (a collective of every rank). It may size thread pools; an
  // exception it throws ends the launch. Null: not called. Runtimes whose workers all live in this process ignore it.
  std::function<void(int workers_on_machine)> placed;
};

// Names accepted by LaunchOptions::runtime in this build.
std::vector<std::string> runtime_names();

// Runs fn on every local worker of a new world. Throws InvalidArgument for an unknown runtime
// (listing the allowed names), a bad worker count or a cluster file given to a runtime other than
// sim. Returns the seconds the run took on the runtime's clock (simulated under sim).
double launch(const LaunchOptions& options, const WorkerFn& fn);
// What launch() checks before it starts anything (the runtime's name, the fields every runtime
// shares, collectives and windows with FAST_COLLECTIVES and FAST_WINDOWS, then
// RuntimeBackend::check), with nothing started or logged: a caller checks its settings before
// reading any data. Throws as launch() would.
void check_launch_options(const LaunchOptions& options);

// Ends every world of this process that is under way, as a failing worker would: each local
// worker's wait throws core::RemoteError naming `message` within about 50 ms, and so does every
// later operation of that world (its launch then ends with the workers' errors). threads, zmq and
// mpi: their messages and FAST's collectives over them, not a native MPI collective (it cannot be
// cancelled); sim: from each worker's next runtime call (a computation under way ends first). The
// other processes learn of it as of any worker's error, once this process's workers end. For a
// user's interrupt (the Python binding's Ctrl-C); from any thread, not from a signal handler.
void interrupt_launches(const std::string& message);
// How many times interrupt_launches() was called in this process: a world whose count changed
// since it started was interrupted. Thread-safe.
std::uint64_t interrupts_so_far() noexcept;

}  // namespace fast::runtime
