#pragma once
// A rendezvous served by a process that runs no worker (`fast rendezvous`): the hosts of a zmq run
// meet at options.rendezvous (HOST:PORT, bound here); it hands out ranks, endpoints and public keys
// to options.world_size processes and returns once each got them (docs/launch.md). Keys, allow-list
// and time limits as for a worker process (ProcessOptions and the FAST_* variables); the server's
// key must be the first of every process's allow-list. Throws TimeoutError when not every process
// arrived within the rendezvous timeout, IoError when the address cannot be bound.

#include "fast/runtime/launcher.hpp"

namespace fast::runtime::zmq {

void serve_rendezvous(const ProcessOptions& options);

}  // namespace fast::runtime::zmq
