#pragma once
// LaunchJanitor: removes what a `fast launch` run leaves in the temporary folder when `fast launch`
// itself dies without its clean-up (SIGKILL): the folder of the run's generated keys and the ipc://
// socket files of its processes (TMPDIR/fast-<pid>-<role>-<hex>.sock, src/runtime/zmq/backend.cpp).
// The processes die with launch (PR_SET_PDEATHSIG), the keys would stay: a small process detached
// by setsid(), forked before the processes, waits for launch's end on a pipe (its end of file comes
// whichever way launch ends), then for each process to be gone, and removes their files.
//
// One object in launch's main thread, made while launch has no other thread (the janitor runs code
// after fork that is safe only then).

#include <sys/types.h>

#include <filesystem>

namespace fast::cli {

class LaunchJanitor {
 public:
  // Forks the janitor (stdin, stdout and stderr on /dev/null, no other file of launch open, signals
  // at their defaults). key_dir: the folder to remove ("" none). IoError when pipe or fork fails.
  explicit LaunchJanitor(std::filesystem::path key_dir);
  // Closes the pipe and waits for the janitor (which then finds the processes reaped).
  ~LaunchJanitor();
  LaunchJanitor(const LaunchJanitor&) = delete;
  LaunchJanitor& operator=(const LaunchJanitor&) = delete;

  // Tells the janitor a process it must outlive and whose socket files it removes.
  void watch(pid_t pid);

 private:
  int pipe_ = -1;  // write end
  pid_t pid_ = -1;
};

}  // namespace fast::cli
