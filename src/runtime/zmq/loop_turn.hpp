#pragma once
// LoopTurn: times the steps of one turn of ZmqTransport's I/O loop (transport_loop.cpp) and words
// a warning when a turn held the thread long. That thread sends this process's heartbeats and
// reads everyone else's, so a turn longer than the peer timeout makes the peers count this process
// lost and this process count them lost; the warning names the step that took the time.
//
// Times are seconds on one steady clock, given by the caller (tests give their own).
// Thread-safety: none; one per I/O thread.

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace fast::runtime::zmq {

class LoopTurn {
 public:
  // peer_timeout: seconds of silence after which a process is lost; a turn longer than a quarter
  // of it is reported.
  explicit LoopTurn(double peer_timeout) : peer_timeout_(peer_timeout) {}

  // A turn starts at `now`.
  void begin(double now) {
    start_ = last_ = now;
    longest_ = 0;
    longest_step_ = {};
  }
  // The step `name` (a string literal: it is kept) ended at `now`.
  void step(std::string_view name, double now) {
    if (now - last_ > longest_) {
      longest_ = now - last_;
      longest_step_ = name;
    }
    last_ = now;
  }
  // The warning for the turn that ended at the last step, or nothing if it took at most the limit.
  std::optional<std::string> report() const {
    const double took = last_ - start_;
    if (took <= peer_timeout_ / 4) return std::nullopt;
    return fmt::format(
        "zmq runtime: a turn of this process's I/O thread took {:.1f} s, {:.1f} s of it in {}; this thread sends and "
        "reads the heartbeats, and a process silent for {} s (--peer-timeout) is counted lost",
        took, longest_, longest_step_, peer_timeout_);
  }

 private:
  double peer_timeout_;
  double start_ = 0, last_ = 0, longest_ = 0;
  std::string_view longest_step_;
};

}  // namespace fast::runtime::zmq
