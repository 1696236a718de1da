#pragma once
// The TCP port of a rendezvous that a launcher chooses for its processes (docs/launch.md): free on
// 127.0.0.1 when chosen, and bound a moment later by process 0 of the run.
//
// Errors: IoError when no socket can be created or no port is free. Thread-safe (no shared state).

#include <string>

namespace fast::runtime::zmq {

// A TCP port of 127.0.0.1 free right now, drawn at random from the 12,000 ports just below the
// kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range; 32768 where it says nothing).
// bind(0) and outgoing connections take their ports inside that range, so a port from bind(0) could
// be taken by any other program's socket (or a concurrent run's) before process 0 binds it, which
// CI saw as "Address already in use". Falls back to bind(0) when 64 draws are all taken.
int free_loopback_port();

// Why a listener cannot bind 127.0.0.1:port now ("Address already in use"), or an empty text when
// it can: a probe bound with SO_REUSEADDR as ZeroMQ's listeners are, so a port held only by
// connections closing (TIME_WAIT) counts as free.
std::string loopback_port_taken(int port);

}  // namespace fast::runtime::zmq
