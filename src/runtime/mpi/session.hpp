#pragma once
// The MPI library state of this process (private header of the mpi runtime).
//
// MPI may be initialised once and finalized once per process, so the first mpi launch of a
// process initialises it (MPI_Init_thread asking for MPI_THREAD_MULTIPLE) and it is finalized when
// the process exits (atexit). Later launches in the same process reuse it.
//
// MPI is fail-stop: when one rank dies, mpirun or srun ends the others with SIGTERM. init()
// installs a SIGTERM handler that writes, before the process ends, which rank it is and the last
// failure this rank heard of (set_last_failure), so every rank's output says why the run ended.
//
// Thread-safety: init() from any thread (once-only inside); the rest after init().

#include <mpi.h>

#include <string>

namespace fast::runtime::mpi {

struct Session {
  int rank = 0;
  int size = 1;
  int thread_level = MPI_THREAD_SINGLE;  // what the library provides
};

// Initialises MPI the first time (throws core::InvalidUsage when the library provides less than
// MPI_THREAD_MULTIPLE, naming what it provides); returns the process's rank and size in
// MPI_COMM_WORLD.
const Session& init();

// This process ends without MPI_Finalize (its atexit call is skipped): a rank here ended without
// every peer's end (MpiTransport::finish timed out: a rank that failed, while a peer waits in a
// collective). MPI_Finalize waits for every rank, and that peer is inside a collective this rank
// will never join: the process would hang at its exit, and the launcher, which ends the job when a
// rank exits without finalizing (fail-stop), would wait with it. Thread-safe.
void end_without_finalize();

// Remembers `text` as what the SIGTERM notice prints (truncated to a fixed size; async-signal-safe
// to print). Thread-safe.
void set_last_failure(const std::string& text);

// ThreadSanitizer cannot see OpenMPI's own synchronisation (the library is not instrumented):
// data a collective moves may be written by whichever thread runs MPI's progress engine, here the
// transport's progress thread inside MPI_Improbe, and read by the worker once MPI_Allreduce
// returned. progress_made() (after the progress thread's MPI calls) and results_visible() (after a
// collective returns) tell TSan the happens-before edge OpenMPI provides; both do nothing in a
// build without TSan.
void progress_made();
void results_visible();

// The text of an MPI error code.
std::string error_text(int code);

// Throws core::IoError "mpi runtime: <what>: <MPI's text>" when code is not MPI_SUCCESS.
void check(int code, const char* what);

}  // namespace fast::runtime::mpi
