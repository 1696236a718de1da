#pragma once
// HandshakeMonitor: the connections a ZeroMQ socket refused at its handshake, logged.
//
// A CURVE server refuses a client with a wrong server key, one that does not speak CURVE (NULL, an
// `--insecure` process against a secure run) or bytes that are not ZeroMQ before any message
// reaches the program; only the socket's monitor hears of it. HandshakeMonitor attaches a monitor
// to a socket (the data and heartbeat routers, the rendezvous) and logs each refusal it reports,
// rate-limited (refused_connections_log): "zmq runtime: refused a connection on tcp://...: CURVE
// failed: a wrong server key, or a forged message". Authentication refusals of the allow-list
// (ZAP) are also logged by the Authenticator, which names the key.
//
// On a client socket (Role::client: a process asking the rendezvous for its place) it logs
// nothing and records what the server answered instead: auth_refused() once the server's
// allow-list refused this process's key, which the client then reports rather than waiting for
// an answer that never comes.
//
// Ownership: the monitored socket must outlive the monitor (the destructor detaches it). One
// thread uses both: the one that polls the monitored socket. Failure: nothing it reports is an
// error of the run.

#include <cstdint>
#include <string>

#include <zmq.hpp>

namespace fast::runtime::zmq {

class HandshakeMonitor {
 public:
  enum class Role { server, client };
  HandshakeMonitor(::zmq::context_t& context, ::zmq::socket_t& monitored, Role role = Role::server);
  ~HandshakeMonitor();
  HandshakeMonitor(const HandshakeMonitor&) = delete;
  HandshakeMonitor& operator=(const HandshakeMonitor&) = delete;

  // The socket to poll for ZMQ_POLLIN (events waiting).
  ::zmq::socket_t& events() noexcept { return monitor_; }
  // Logs every event waiting; never blocks.
  void log_refusals();
  // Refusals for the protocol seen so far (a wrong server key, no CURVE, not ZeroMQ: what no
  // Authenticator hears of; neither its allow-list's refusals nor a client that went away), and
  // the last one's text.
  std::uint64_t refused() const noexcept { return refused_; }
  const std::string& last() const noexcept { return last_; }
  // Role::client: whether a server refused this socket's key (ZAP status 400: not in its
  // allow-list), as log_refusals() found so far.
  bool auth_refused() const noexcept { return auth_refused_; }

 private:
  Role role_;
  bool auth_refused_ = false;
  void* monitored_;
  ::zmq::socket_t monitor_;
  std::uint64_t refused_ = 0;
  std::string last_;
};

}  // namespace fast::runtime::zmq
