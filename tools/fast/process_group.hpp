#pragma once
// The local processes of `fast launch`: started together, their output relayed line by line with
// the rank as prefix, signalled together, reaped, and never left behind.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fast::cli {

// How one process ended.
struct ChildExit {
  int code = 0;    // its exit code, or core::exit_code::killed_by(the signal that killed it) = 128 + signal
  int signal = 0;  // that signal; 0: it exited by itself
  bool failed() const { return code != 0; }  // 0: core::exit_code::ok
  std::string describe() const;              // "exit code 3" or "killed by signal SIGKILL"
};

// One process to start.
struct ChildSpec {
  std::string program;            // path of the executable (not searched on PATH)
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // its whole environment, "NAME=value" each
  std::string label;              // prefix of its output lines, "[label] "; empty: its rank
  // Its standard input: these bytes, then end of file (through a pipe; at most 32 KiB, so that the
  // write never blocks); without: /dev/null. How a launch gives a process its secrets off its
  // command line.
  std::optional<std::string> input;
};

// N processes; rank i is children[i]. Each runs in a process group of its own (so a terminal's
// Ctrl-C reaches it once, through launch), with stdin from /dev/null (or ChildSpec::input), and dies
// with SIGKILL if this process dies (PR_SET_PDEATHSIG). Every line a child writes to stdout (stderr)
// is written to this process's stdout (stderr) as "[label] line\n" (label: ChildSpec::label, else the
// rank) with one write per batch of whole lines: lines of
// different children never mix. A line longer than 1 MiB is cut into 1 MiB lines; a last line
// without '\n' is ended with one when its pipe closes or at finish(). Single-threaded: one thread
// owns the object and calls all of its methods.
class ProcessGroup {
 public:
  // Starts every child (IoError if fork or a pipe fails; those already started are killed first).
  explicit ProcessGroup(const std::vector<ChildSpec>& children);
  // finish(), then SIGKILL to the process group of every child (what a child left behind) and
  // reaping of every child still running.
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int size() const { return static_cast<int>(children_.size()); }
  int running() const;  // children not reaped yet
  pid_t pid(int rank) const { return children_.at(static_cast<std::size_t>(rank)).pid; }
  // The last line rank wrote to stderr (relayed so far; at most 1 MiB, as relayed); after its end, its
  // last line (`fast` writes its failure there: "fast: KIND: WHAT").
  const std::string& last_error_line(int rank) const {
    return children_.at(static_cast<std::size_t>(rank)).err.last_line;
  }
  // How rank ended; empty while it runs.
  const std::optional<ChildExit>& exit(int rank) const { return children_.at(static_cast<std::size_t>(rank)).exit; }

  // Waits up to timeout for output, for a child's end or for wake_fd (-1: none) to be readable;
  // relays the output and reaps the children that ended. Returns the ranks reaped by this call, in
  // the order seen (a child's output written before it ended is relayed before it is returned).
  std::vector<int> pump(std::chrono::milliseconds timeout, int wake_fd);
  // Sends sig once to every child still running: to its process group when whole_group (the child
  // leads it), else, or where that group does not exist, to its pid. Returns how many children it
  // was sent to.
  int signal(int sig, bool whole_group);
  // Relays what the pipes hold now without waiting, ends partial lines and closes the pipes.
  void finish();
  // Starts rank again from spec (fast launch --restart) once it ended (InvalidUsage while it runs):
  // the rest of its output is relayed, what its process group left is killed (SIGKILL), and the
  // new process takes its place (pid(rank), exit(rank) empty again). IoError as the constructor.
  void restart(int rank, const ChildSpec& spec);

 private:
  struct Stream {
    int fd = -1;      // read end of the child's pipe; -1: closed
    int out_fd = -1;  // where its lines go (1 or 2)
    std::string partial;
    std::string last_line;  // the last line written
  };
  struct Child {
    pid_t pid = -1;
    std::string label;
    Stream out, err;
    std::optional<ChildExit> exit;
  };

  Child start(int rank, const ChildSpec& spec);
  void close_streams(int rank);                 // relays what is left, ends the partial lines, closes the pipes
  void relay(int rank, Stream& s, bool drain);  // reads s (until EAGAIN when drain) and writes lines
  void write_lines(int rank, Stream& s, bool flush_partial);
  bool reap(int rank);
  void kill_all();

  std::vector<Child> children_;
};

}  // namespace fast::cli
