#pragma once
// A shell command the multi-process CLI tests start in a process group of its own, so that a test
// that gives up on it can kill everything it started (mpirun and its ranks, fast launch and its
// workers) by process group id.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

extern char** environ;

namespace fast::testing {

// How many times longer a bound on a whole training run must be in this build. ThreadSanitizer
// slows a training run about tenfold, and the multi-process runs are sized to end well inside their
// bounds in a plain build: under TSan they get twice the time (`make sanitize`); 1 elsewhere.
#if defined(__SANITIZE_THREAD__)
inline constexpr int kRunTimeScale = 2;
#else
inline constexpr int kRunTimeScale = 1;
#endif

// How long, in seconds, a spawned process may take to print a line a test waits for (its pid, its
// first progress line): 60, twice that under TSan, where several processes start libtorch at once.
inline constexpr int kStartBound = 60 * kRunTimeScale;

// OpenMPI keeps every mpirun's files under <tmpdir>/ompi.<host>.<uid>, which the last mpirun to
// end removes: two mpiruns of tests running in parallel that start at that moment race to create it,
// and the loser's orte_init fails ("mkdir ... File exists"). A test process that starts mpirun calls
// private_mpi_session_base() first: its mpiruns (and their ranks, which inherit the variable) keep
// their files under /tmp/fast_ompi_<pid>, made there and removed when the process exits.
inline std::filesystem::path mpi_session_base_of_this_process() {
  return std::filesystem::temp_directory_path() / ("fast_ompi_" + std::to_string(::getpid()));
}

inline void private_mpi_session_base() {
  static const std::string base = [] {
    const std::filesystem::path p = mpi_session_base_of_this_process();
    std::filesystem::remove_all(p);  // a directory left by an earlier process of the same id
    std::filesystem::create_directories(p);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(mpi_session_base_of_this_process(), ignored);
    });
    return p.string();
  }();
  ::setenv("OMPI_MCA_orte_tmpdir_base", base.c_str(), 1);
}

struct Spawned {
  pid_t pid = -1;             // the shell, leader of the group; -1 when it could not start
  std::filesystem::path log;  // its stdout and stderr
};

// `command` run by /bin/sh in dir, in a new process group, its output in dir / log_name.
inline Spawned spawn_in_group(const std::filesystem::path& dir, const std::string& command,
                              const std::string& log_name = "log") {
  Spawned s{-1, dir / log_name};
  const std::string line = "cd '" + dir.string() + "' && exec " + command + " > '" + log_name + "' 2>&1";
  const char* argv[] = {"sh", "-c", line.c_str(), nullptr};
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  if (posix_spawn(&s.pid, "/bin/sh", nullptr, &attributes, const_cast<char* const*>(argv), environ) != 0) s.pid = -1;
  posix_spawnattr_destroy(&attributes);
  return s;
}

// Waits at most `seconds` for the command: its wait status, or -1 after killing its whole group.
inline int wait_or_kill_group(const Spawned& s, double seconds) {
  if (s.pid <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(s.pid, &status, WNOHANG) == s.pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-s.pid, SIGKILL);
  waitpid(s.pid, &status, 0);
  return -1;
}

}  // namespace fast::testing
