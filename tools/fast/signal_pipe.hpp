#pragma once
// Signals turned into bytes on a pipe (the self-pipe trick), so that a poll() loop wakes up for
// them and handles them outside the handler. Used by `fast launch`.

#include <csignal>
#include <vector>

namespace fast::cli {

// While alive, catches the given signals (the handler only writes the signal's number to a
// non-blocking pipe) and ignores SIGPIPE; the destructor restores the previous dispositions.
// One instance per process at a time (the handler writes to a process-wide fd). Not thread-safe.
class SignalPipe {
 public:
  explicit SignalPipe(const std::vector<int>& signals);
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Readable when a signal arrived since the last take(); for poll().
  int fd() const { return read_fd_; }
  // The signals received since the last call, in arrival order (repeats kept); never blocks.
  std::vector<int> take();

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::vector<std::pair<int, struct sigaction>> previous_;
};

}  // namespace fast::cli
