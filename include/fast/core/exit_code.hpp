#pragma once
// The exit codes of the `fast` command, in one place for both directions: tools/fast/command_line.cpp
// (run_with_exit_codes) turns an exception into one of them (the producer), and whoever reads the status of a `fast`
// process (`fast compare` running a `sim` run in a child, `fast launch`, the tests) compares against the same names
// (the consumers). docs/errors.md lists them for users; the numbers are an interface: never change one.
//
//   ok               0    success
//   unexpected       1    anything that is not a FAST error (a bug: please report it)
//   bad_input        2    InvalidArgument, InvalidUsage, a command line CLI11 refuses
//   io_or_peer_lost  3    IoError (a file, peer or link is broken), PeerLost (a peer left or died)
//   timeout          4    TimeoutError (an operation past op_timeout)
//   failed           5    RemoteError (another worker failed) and any other fast::Error
//   below_min_workers 6   an elastic run ended because a loss left fewer workers than min_workers
//                         (its checkpoint, evaluation and summary written; docs/faults.md)
//   launch_timeout   124  `fast launch --timeout` stopped the run (as coreutils' timeout(1))
//   cannot_exec      127  a child process could not be started (exec failed; as the shell does)
//   killed_by(sig)   128 + sig   a child killed by signal sig, as `fast launch` reports it (as the shell)
//
// An unscoped enum in a namespace of its own: the names are int constants, so `return
// exit_code::bad_input;` and `EXPECT_EQ(status, exit_code::timeout)` read as they mean.

#include <string>

#include "fast/core/error.hpp"

namespace fast::core::exit_code {

enum Code : int {
  ok = 0,
  unexpected = 1,
  bad_input = 2,
  io_or_peer_lost = 3,
  timeout = 4,
  failed = 5,
  below_min_workers = 6,
  launch_timeout = 124,
  cannot_exec = 127,
};

// The kinds of failure that share io_or_peer_lost, as `fast` names them in its last line on stderr,
// "fast: KIND: WHAT" (run_with_exit_codes): how a reader of its output (`fast launch`) tells a
// broken file, port or link of the process itself from a peer it lost.
inline constexpr const char* io_error_kind = "I/O error";
inline constexpr const char* peer_lost_kind = "peer lost";

// The status of a process killed by signal `sig` (> 0), as the shell and `fast launch` report it.
constexpr int killed_by(int sig) noexcept { return 128 + sig; }

// The consumer's side of run_with_exit_codes's mapping (tools/fast/command_line.cpp): returns for ok; otherwise throws
// the exception whose exit code `code` is, carrying `what` (InvalidArgument for bad_input, IoError for io_or_peer_lost,
// TimeoutError for timeout, Error for every other code, so that the reader exits with failed).
inline void throw_unless_ok(int code, const std::string& what) {
  switch (code) {
    case ok: return;
    case bad_input: throw InvalidArgument(what);
    case io_or_peer_lost: throw IoError(what);
    case timeout: throw TimeoutError(what);
    default: throw Error(what);
  }
}

}  // namespace fast::core::exit_code
