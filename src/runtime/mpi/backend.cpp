// The `mpi` runtime's registry entry and launch (runtime/registry.hpp): one worker per MPI rank,
// ranks and size from MPI_COMM_WORLD, started by mpirun or srun.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../engine/local_world.hpp"
#include "../engine/transport_run.hpp"
#include "collectives.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/runtime/environment.hpp"
#include "fast/runtime/registry.hpp"
#include "launchers.hpp"
#include "session.hpp"
#include "transport.hpp"

namespace fast::runtime::mpi {

namespace {

// A duplicate of MPI_COMM_WORLD, freed at scope exit.
struct Communicator {
  MPI_Comm comm = MPI_COMM_NULL;
  Communicator() { check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup"); }
  ~Communicator() { MPI_Comm_free(&comm); }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
};

// InvalidArgument on every rank, before any worker starts, unless every rank's shared settings
// (ProcessOptions::shared_settings) are rank 0's: a rank of other settings (steps, batch, model)
// would call other collectives than the others, which MPI's own turn into a hang or memory
// corruption. Collectives of sizes that do not depend on the settings: rank 0's text's length,
// the text, one flag per rank.
void check_shared_settings(MPI_Comm comm, const Session& session, const std::string& mine) {
  std::uint64_t length = mine.size();
  check(MPI_Bcast(&length, 1, MPI_UINT64_T, 0, comm), "MPI_Bcast");
  std::string rank0(length, '\0');
  if (session.rank == 0) rank0 = mine;
  check(MPI_Bcast(rank0.data(), static_cast<int>(length), MPI_CHAR, 0, comm), "MPI_Bcast");
  const std::string differs = settings_difference(mine, fmt::format("rank {}", session.rank), rank0, "rank 0");
  int own = differs.empty() ? 0 : 1;
  std::vector<int> flags(static_cast<std::size_t>(session.size));
  check(MPI_Allgather(&own, 1, MPI_INT, flags.data(), 1, MPI_INT, comm), "MPI_Allgather");
  std::vector<int> others;
  for (int r = 0; r < session.size; ++r)
    if (flags[static_cast<std::size_t>(r)] != 0) others.push_back(r);
  if (others.empty()) return;
  if (own != 0)
    FAST_THROW(core::InvalidArgument,
               "mpi runtime: rank {} was started with other settings than rank 0: {} (every rank of a run takes the "
               "same settings)",
               session.rank, differs);
  FAST_THROW(core::InvalidArgument,
             "mpi runtime: rank(s) {} were started with other settings than rank 0 (each names the setting); every "
             "rank of a run takes the same settings",
             fmt::join(others, ", "));
}

// A short bound for the end of a rank whose worker failed: the others may be inside a native
// collective that cannot be interrupted, and mpirun ends them once this rank exits.
constexpr double kFailedFinishSeconds = 5;

double run_mpi(const LaunchOptions& options, const WorkerFn& fn) {
  FAST_ENFORCE(options.process.workers_per_process == 1,
               "workers_per_process: the mpi runtime runs one worker per rank (start more ranks), got {}",
               options.process.workers_per_process);
  const Session& session = init();
  const double op_timeout = options.op_timeout_seconds >= 0
                                ? options.op_timeout_seconds
                                : core::env_number(runtime_environment(), "FAST_OP_TIMEOUT");
  Communicator data;     // the transport's messages
  Communicator group;    // the native collectives
  Communicator windows;  // the one-sided windows (MPI RMA)
  MpiCollectives native(group.comm);
  MpiRemoteMemory remote(windows.comm, session.rank, session.size);
  MpiTransport transport(data.comm, session.rank, session.size, op_timeout);
  if (options.collectives == "native") transport.set_native_collectives(&native);
  if (options.windows == "rma") transport.set_remote_memory(&remote);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  core::log(core::LogLevel::info, "mpi runtime: rank {} of {}, pid {} on host {}, {} collectives, windows on {}",
            session.rank, session.size, static_cast<long>(getpid()), host, options.collectives,
            options.windows == "rma" ? "MPI RMA" : "FAST's service");

  check_shared_settings(group.comm, session, options.process.shared_settings);
  if (options.placed) {  // the ranks that share this node's memory, hence its cores
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(group.comm, MPI_COMM_TYPE_SHARED, session.rank, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    int on_node = 1;
    check(MPI_Comm_size(node, &on_node), "MPI_Comm_size");
    check(MPI_Comm_free(&node), "MPI_Comm_free");
    options.placed(on_node);
  }
  check(MPI_Barrier(group.comm), "MPI_Barrier");  // now() = 0 at the same instant on every rank
  engine::LocalWorld world({.world_size = session.size, .first_rank = session.rank, .local_size = 1}, op_timeout, "mpi",
                           &transport);
  return engine::run_over_transport(
      world, fn,
      {.tolerate_lost = options.tolerate_lost_workers,
       .start = [&](const engine::LossFn& on_lost) { transport.start(world, on_lost); },
       .on_failure = [&](int, const std::string& reason) { transport.announce_failure(reason); },
       .finish =
           [&](const std::vector<std::exception_ptr>& errors) {
             transport.finish(errors[0] != nullptr ? std::min(op_timeout, kFailedFinishSeconds) : op_timeout);
             transport.stop();
           }});
}

}  // namespace

RuntimeBackend backend() {
  return {.name = "mpi",
          .description =
              "one worker per MPI rank (mpirun, srun), OpenMPI point-to-point, native collectives and "
              "one-sided windows on MPI RMA",
          .launch = run_mpi,
          .native_collectives = true,
          .remote_memory = true,
          .multi_process = true,
          .launchers = launchers()};
}

}  // namespace fast::runtime::mpi
