#pragma once
// Which launcher started this process, and so which world it belongs to (docs/launch.md).
//
// Each multi-process runtime declares the launchers whose environment it recognises, as
// LauncherSignature entries of its registry entry (runtime/registry.hpp): zmq recognises `fast
// launch` (FAST_RENDEZVOUS with FAST_WORLD_SIZE) and torchrun (RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT); mpi recognises OpenMPI's mpirun, MPICH's PMI, PMIx and Slurm's srun. detect_launcher()
// asks every signature of this build in the order of their precedence (fast launch, then MPI's,
// then torchrun's) and returns the first match. choose_world() then combines what the user said
// explicitly (a runtime, a worker count, process options) with what was detected: explicit options
// win, the launcher fills what they leave open, and a contradiction (a world of N processes given a
// runtime that runs every worker inside one process, a worker count the runtime ignores) is an
// InvalidArgument instead of N independent copies of one run. `fast train` and fast.init() both
// use it.
//
// Thread-safety: pure functions of the environment lookup they are given.

#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fast/runtime/launcher.hpp"

namespace fast::runtime {

// Reads one environment variable: nullptr when unset. The default reads the process's environment.
using Environment = std::function<const char*(const char*)>;
Environment process_environment();

// A launcher's view of this process.
struct LauncherWorld {
  std::string source;       // who started it: "fast launch", "OpenMPI", "torchrun", ...; "" none
  std::string runtime;      // the runtime that joins this launcher's world (its signature's backend)
  std::string evidence;     // the variables that show it, as NAME=VALUE separated by spaces
  int rank = 0;             // this process's rank in [0, world); -1: assigned at the rendezvous
  int world = 1;            // processes in the run; 0: known once the runtime starts (PMIx)
  int local_rank = 0;       // this process's index among those of its host; -1: unknown
  int local_world = 0;      // processes on this host; 0: unknown
  std::string rendezvous;   // HOST:PORT where the processes meet (zmq); empty: the runtime's own way
  bool brings_keys = true;  // whether the launcher hands the processes their keys (fast launch does;
                            // torchrun does not: FAST_KEY_FILE/FAST_ALLOW_FILE, or --insecure)
};

// One launcher a backend recognises. `recognise` returns its world when its variables are set
// (nullopt otherwise) and throws InvalidArgument, naming the variable, when they are set but wrong
// (not a number, a rank outside the world, a missing companion variable).
struct LauncherSignature {
  std::string_view name;  // as LauncherWorld::source
  int precedence;         // lower is asked first: fast launch 10, MPI's 20-29, torchrun 30
  std::optional<LauncherWorld> (*recognise)(const Environment& env) = nullptr;
};

// The first launcher of this build, by precedence, whose variables are set; nullopt when none
// (a single process). LauncherWorld::runtime is filled with the backend's name.
std::optional<LauncherWorld> detect_launcher(const Environment& env);

// What the user said explicitly (flags, a config file, fast.init's arguments).
struct WorldRequest {
  std::string runtime;          // "": follow the launcher (threads without one)
  int workers = 0;              // workers asked for in this process; 0: not asked
  bool workers_binding = true;  // false: `workers` comes from a config file that runs of several runtimes
                                // share; a count the runtime ignores is then a warning, not an error
  ProcessOptions process;       // explicit process options (rendezvous, world size, rank, keys)
};

// The world a process joins: the runtime, the process options completed from the launcher, and
// the line that says so.
struct WorldChoice {
  std::string runtime;
  bool runtime_given = false;             // from WorldRequest::runtime, not implied
  std::optional<LauncherWorld> launcher;  // nullopt: a single process
  ProcessOptions process;                 // WorldRequest::process with what the launcher tells
  std::vector<std::string> warnings;      // one line each: what was asked for and is ignored
  // One line for the top of a run's output: what was detected and what follows from it, e.g.
  // "torchrun (RANK=1 WORLD_SIZE=2 ...): process 1 of 2, runtime zmq".
  std::string describe() const;
};

// The world of `request` under the launcher `env` shows. InvalidArgument (exit code 2), naming
// what contradicts what, for: an unknown runtime; a launcher's world of more than one process with
// a runtime whose workers all live in one process (threads, sim); a runtime other than the
// launcher's under it (its processes would each start a world of their own), unless the request
// names its own rendezvous; a worker count above 1 with a runtime whose world is made of processes
// (the count would be ignored; a warning in `warnings` when not workers_binding); a launcher that
// hands out no keys with neither keys nor insecure.
WorldChoice choose_world(const WorldRequest& request, const Environment& env);

// InvalidArgument, naming the launcher, when `runtime` runs every worker inside this process
// (threads, sim) while `env` shows a launcher's world of several processes: each process would run
// a world of its own, copies of one run. runtime::launch() asks it of every program, as
// choose_world() does for fast train and fast.init.
void refuse_copies_of_one_run(std::string_view runtime, const Environment& env);

// Parses a whole decimal integer in [low, high] from `value` of variable `name`; InvalidArgument
// naming the variable otherwise. For the signatures.
int launcher_integer(const char* name, const char* value, int low, int high);
// "NAME=VALUE NAME=VALUE" for those of `names` that are set, in that order. For the signatures.
std::string launcher_evidence(const Environment& env, std::initializer_list<const char*> names);

}  // namespace fast::runtime
