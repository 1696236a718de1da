#pragma once
// The rendezvous (as c10d's store): every process of a zmq run says hello to one address; the
// process that serves it (the one with process rank 0, or, when ranks are assigned, the first
// process that can bind the address) collects world_size hellos, assigns the ranks not given in
// arrival order, checks that every process agrees (world size, workers per process, distinct
// ranks) and sends everyone the table of every process's rank, endpoints, host and public key.
// Processes may arrive in any order within the rendezvous timeout. With CURVE, the rendezvous
// socket admits only keys of the allow-list; the server's key is the allow-list's first key.
//
// Messages are wire/ frames of kind `hello` whose payload is JSON (at most 64 KiB), validated
// before use (hello.hpp). A hello that reaches the server after the run started asks to take a
// lost rank back (a rejoin); the transport of the serving process answers it (transport.hpp):
// with the table and "rejoin": true, or with "refused": why. Errors: TimeoutError naming how many
// processes arrived; InvalidArgument naming the disagreeing process and field.

#include <zmq.hpp>

#include <optional>

#include "process_table.hpp"
#include "settings.hpp"

namespace fast::runtime::zmq {
class Authenticator;
}

namespace fast::runtime::zmq {

struct RendezvousResult {
  int process_rank = 0;
  ProcessTable table;
  // The server answered with a rejoin: this process takes a lost rank back in a run under way.
  bool rejoining = false;
  // With a rejoin: the workers lost in the run so far (ascending) and those taken back (in order),
  // this process's own ranks included in both, as the server saw or inherited them
  // (ZmqTransport::inherit_membership). Empty otherwise.
  std::vector<int> lost_workers;
  std::vector<int> rejoined_workers;
  // The process that serves the rendezvous (with a rejoin: the one that answered; else 0).
  int desk_process = 0;
  // The process that served the rendezvous keeps its socket: it answers the hellos of processes
  // that come back during the run (ZmqTransport::serve_rejoins). Empty in the other processes.
  std::optional<::zmq::socket_t> desk;
};

// self: this process's info (rank = settings.process_rank, possibly -1). Process rank 0 serves
// the rendezvous; one started again alone in a run that tolerates losses (settings.restarted and
// tolerate_lost: a run under way, where a survivor took the rendezvous over after the first
// process 0 was lost, ZmqTransport) asks that server to take rank 0 back instead. Such a process,
// any rank, asks the first address of --rendezvous whose server answers a probe when it lists
// several (the others are served once no process of the first's host is live).
// auth: the context's handshake checks (nullptr: insecure); a server's timeout reports their refusals.
RendezvousResult rendezvous(::zmq::context_t& context, const Settings& settings, ProcessInfo self,
                            const Authenticator* auth);

// "tcp://HOST:PORT" of rendezvous address `address`: 0 the first of --rendezvous, i > 0
// settings.rendezvous_fallbacks[i - 1]. std::out_of_range past the last.
std::string rendezvous_endpoint(const Settings& settings, std::size_t address);

// The rendezvous socket, bound to rendezvous address `address` with this process's key (CURVE
// server), or nothing when the address cannot be bound here (in use, or not an address of this
// host), or when this process's key is not the one the address's clients expect (logged).
std::optional<::zmq::socket_t> bind_rendezvous(::zmq::context_t& context, const Settings& settings,
                                               std::size_t address = 0);

// Serves a rendezvous for world_size processes without taking part (`fast rendezvous`); returns
// once every process got the table.
void serve_rendezvous(::zmq::context_t& context, const Settings& settings, const Authenticator* auth);

}  // namespace fast::runtime::zmq
