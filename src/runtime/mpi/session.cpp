#include "session.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "fast/core/error.hpp"
#include "fast/core/stop_request.hpp"

namespace fast::runtime::mpi {

namespace {

// What the SIGTERM notice writes: prepared outside the handler, read inside it.
std::array<char, 1024> notice{};
std::atomic<std::size_t> notice_length{0};
std::mutex notice_mutex;
int own_rank = 0;

void write_notice(int rank, const std::string& failure) {
  const std::string text =
      "[fast error] mpi runtime, rank " + std::to_string(rank) + ": ended by the MPI launcher (SIGTERM): " +
      (failure.empty() ? std::string("another rank ended abnormally, or the job was stopped (MPI is fail-stop: "
                                     "docs/launch.md, \"MPI\")")
                       : failure) +
      "\n";
  std::lock_guard<std::mutex> lock(notice_mutex);
  const std::size_t n = std::min(text.size(), notice.size() - 1);
  notice_length = 0;
  std::memcpy(notice.data(), text.data(), n);
  if (n < text.size()) notice[n - 1] = '\n';
  notice_length = n;
}

extern "C" void on_sigterm(int sig) {
  const std::size_t n = notice_length.load();
  if (n > 0) (void)!::write(2, notice.data(), n);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// The graceful stop's time limit ran out: this rank is blocked (a dead peer in a collective), so
// it ends as a rank ended by the launcher does (its notice is out already).
extern "C" void on_grace_expired(int /*sig*/) {
  ::signal(SIGTERM, SIG_DFL);
  ::raise(SIGTERM);
}

// `fast train` stops on SIGTERM (core/stop_request.hpp: the workers agree on a last step, write a
// checkpoint and a summary). mpirun and srun send SIGTERM both when the user stops the job and when
// another rank died, and a rank cannot tell which. So the first SIGTERM writes the notice (the
// launcher may SIGKILL a rank that does not end soon: with a dead rank OpenMPI did after about 2 s),
// asks for the graceful stop and arms an alarm: a rank that has not ended within kGraceSeconds (its
// peers cannot agree: one is dead) ends as before. A second SIGTERM ends it at once.
constexpr unsigned kGraceSeconds = 10;
extern "C" void on_sigterm_graceful(int sig) {
  const std::size_t n = notice_length.load();
  if (n > 0) (void)!::write(2, notice.data(), n);
  ::signal(SIGTERM, on_grace_expired);
  ::signal(SIGALRM, on_grace_expired);
  ::alarm(kGraceSeconds);
  core::request_stop(sig);
}

std::atomic<bool> finalize_skipped{false};  // end_without_finalize()

void finalize_at_exit() {
  if (finalize_skipped.load()) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

const char* level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
  }
}

// The library MPI_Init_thread binds to in this process: SimGrid (linked for the sim runtime) also
// defines MPI_*, and wins if it is loaded first (src/runtime/CMakeLists.txt orders the links).
void check_binding() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) == 0 || info.dli_fname == nullptr) return;
  const std::string library = info.dli_fname;
  if (library.find("simgrid") != std::string::npos)
    FAST_THROW(core::InvalidUsage,
               "mpi runtime: MPI_Init_thread resolves to SimGrid's SMPI ({}) instead of the MPI library: this build "
               "links SimGrid before MPI (rebuild FAST with the mpi runtime's libraries linked first)",
               library);
}

Session start() {
  check_binding();
  Session s;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Query_thread(&s.thread_level);
  } else {
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &s.thread_level), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size);
  // MPI_ERRORS_RETURN: a failed call becomes a FAST error naming it, not an abort without context.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  own_rank = s.rank;
  write_notice(s.rank, "");
  ::signal(SIGTERM, core::stop_handlers_installed() ? on_sigterm_graceful : on_sigterm);
  return s;
}

}  // namespace

const Session& init() {
  static const Session session = start();
  if (session.thread_level < MPI_THREAD_MULTIPLE)
    FAST_THROW(core::InvalidUsage,
               "mpi runtime: the MPI library provides {} but FAST needs MPI_THREAD_MULTIPLE (its window "
               "service and parameter-server shards call MPI from their own threads); use an MPI built with "
               "thread support (Debian's OpenMPI has it) or the zmq runtime",
               level_name(session.thread_level));
  return session;
}

void set_last_failure(const std::string& text) { write_notice(own_rank, text); }

void end_without_finalize() { finalize_skipped.store(true); }

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
namespace {
char mpi_progress_token;  // the address TSan's release/acquire pair on
}
void progress_made() { __tsan_release(&mpi_progress_token); }
void results_visible() { __tsan_acquire(&mpi_progress_token); }
#else
void progress_made() {}
void results_visible() {}
#endif

std::string error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) FAST_THROW(core::IoError, "mpi runtime: {} failed: {}", what, error_text(code));
}

}  // namespace fast::runtime::mpi
