#pragma once
// ZeroMQ calls that a signal may interrupt. A process of `fast train` catches SIGINT and SIGTERM to
// stop at a step (core/stop_request.hpp); the signal lands on whichever thread does not block it,
// and a ZeroMQ call under way there fails with EINTR, which cppzmq throws. These treat that as "not
// yet": the caller looks again, and sees the stop request where it polls for one.

#include <cerrno>
#include <utility>

#include <zmq.hpp>

namespace fast::runtime::zmq {

// ::zmq::poll, with an interruption by a signal counted as a timeout (no item ready).
template <typename... Args>
int poll_through_signals(Args&&... args) {
  try {
    return ::zmq::poll(std::forward<Args>(args)...);
  } catch (const ::zmq::error_t& e) {
    if (e.num() == EINTR) return 0;
    throw;
  }
}

}  // namespace fast::runtime::zmq
