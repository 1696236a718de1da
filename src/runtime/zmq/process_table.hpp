#pragma once
// What the rendezvous tells every process about every process of the run.

#include <string>
#include <vector>

namespace fast::runtime::zmq {

struct ProcessInfo {
  int rank = 0;          // process rank in [0, world size); -1 in a hello that leaves it to the rendezvous
  int first_worker = 0;  // its workers are [first_worker, first_worker + workers)
  int workers = 1;
  std::string host_id;             // equal ids: same host and network namespace (ipc:// works)
  std::string hostname;            // for messages
  std::string machine_id;          // the kernel's boot id: equal ids share the machine's cores; empty: unknown
  std::string ipc_endpoint;        // ipc://... its data socket on its host
  std::string tcp_endpoint;        // tcp://ADDRESS:PORT its data socket over the network
  std::string pulse_ipc_endpoint;  // ipc://... its heartbeat socket on its host
  std::string pulse_tcp_endpoint;  // tcp://ADDRESS:PORT its heartbeat socket over the network
  std::string public_key;          // Z85 CURVE key; empty when insecure
  long pid = 0;
  bool shared_memory = true;  // it offers the processes of its host shared-memory rings (FAST_SHM_BYTES != 0)
  // A rank of a run that may grow (--max-workers) that no process has taken yet: no host, no
  // endpoints, no key; lost from the start until a process joins in its place.
  bool vacant = false;

  // "process 2 on host h2, pid 1234"; "process 5 (vacant)"
  std::string where() const;
};

// The entry of vacant process rank `rank` of a run with `workers` workers per process.
ProcessInfo vacant_process(int rank, int workers);

using ProcessTable = std::vector<ProcessInfo>;

// Whether two processes share a machine's cores, whatever network namespace or container each runs
// in (host_id tells those apart): equal machine ids (the kernel's boot id), else, where either is
// unknown, equal host names.
bool same_machine(const ProcessInfo& a, const ProcessInfo& b);
// Whether two processes send each other their data through shared-memory rings (the same host_id,
// and each offers rings), rather than TCP streams or ZeroMQ's sockets; false for a vacant rank.
// (A ring that cannot be mapped falls back to the other paths; this is what the table says.)
bool rings_between(const ProcessInfo& a, const ProcessInfo& b);
// The workers of the processes of `table` on the machine of process `process` (it included; vacant
// ranks have none): the workers that share its cores.
int workers_on_machine(const ProcessTable& table, int process);

// The host part of "tcp://HOST:PORT" (HOST may be "[v6]", returned without the brackets).
std::string endpoint_host(const std::string& endpoint);
// Its inverse: "tcp://HOST:PORT", HOST in brackets when it is an IPv6 address; port may be "*".
std::string tcp_address(const std::string& host, const std::string& port);

}  // namespace fast::runtime::zmq
