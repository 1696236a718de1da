#pragma once
// Settings of one process of a zmq run: ProcessOptions with every default resolved from the
// FAST_* environment (core/env table), checked before anything is bound or sent.

#include <string>
#include <vector>

#include "fast/core/port_range.hpp"
#include "fast/runtime/launcher.hpp"
#include "sealer.hpp"

namespace fast::runtime::zmq {

struct RendezvousAddress {
  std::string host;  // a name or an address, IPv6 without brackets
  int port = 0;
  // host's numeric addresses, resolved once when the settings are (none where it does not
  // resolve): which processes run on that host (ZmqTransport::on_rendezvous_host).
  std::vector<std::string> numeric;
};

struct Settings {
  std::string rendezvous_host;  // from the first HOST:PORT of --rendezvous
  int rendezvous_port = 0;
  // The addresses after the first in --rendezvous (comma-separated): where a process that takes a
  // rank back finds the rendezvous once no process of the earlier addresses' hosts is live (each
  // served by the lowest live process of its host, ZmqTransport::take_over_desk). With CURVE,
  // address i is reached with allowed_keys[i] (the first address: allowed_keys[0]), or with the
  // one key of an allow-list that holds one (the run's key, which every process holds).
  std::vector<RendezvousAddress> rendezvous_fallbacks;
  int world_size = 1;  // processes that start the run (the rendezvous waits for these)
  // Processes the run may have (--max-workers / workers per process): ranks [world_size,
  // max_processes) start vacant and are taken by processes that join later. world_size when the
  // run does not grow.
  int max_processes = 1;
  int process_rank = -1;  // -1: assigned by the rendezvous
  int workers_per_process = 1;
  bool insecure = false;
  std::string shared_settings;            // ProcessOptions::shared_settings: sent in the hello, checked by the server
  std::string public_key, secret_key;     // Z85; empty when insecure
  std::vector<std::string> allowed_keys;  // Z85; the first is the rendezvous server's
  double peer_timeout = 5;                // seconds
  double rendezvous_timeout = 60;         // seconds
  // How the rendezvous's timeout messages name rendezvous_timeout's setting: both forms, since a
  // Python program under `fast launch` sets the environment variable only.
  std::string rendezvous_timeout_name = "--rendezvous-timeout or FAST_RENDEZVOUS_TIMEOUT";
  double op_timeout = 600;                // seconds
  std::string transport;                  // "", "ipc" or "tcp"
  std::string host;                       // address bound for tcp
  std::string advertise;                  // address peers reach this process at (FAST_ADVERTISE; else host)
  core::PortRange ports;                  // every listening port in it (FAST_PORTS); any when empty
  bool tolerate_lost = false;
  bool restarted = false;            // FAST_RESTARTED: started again alone in a run under way
  double poll_seconds = 200e-6;      // FAST_POLL_US: how long a waiting thread polls rings and streams itself
  bool streams = true;               // FAST_STREAMS: data between hosts through direct TCP streams
  long long seal_threads = -1;       // FAST_SEAL_THREADS: helpers sealing the streams' chunks; -1 automatic
  AesLibrary aes_library = AesLibrary::openssl;  // FAST_AES_LIBRARY, resolved ("auto": the fastest offered)
  int read_alongside = -1;           // FAST_READ_ALONGSIDE: 1, 0, or -1 automatic
  long long shared_ring_bytes = -1;  // per pair of processes of one host; 0: none; -1: automatic (ring_capacity)
};

// InvalidArgument naming the option (and its FAST_* variable), expected versus got; IoError for a
// key file that cannot be read. Logs a warning for an insecure run.
Settings resolve_settings(const LaunchOptions& options);
// The same checks, nothing logged (RuntimeBackend::check: before any data is read).
void check_settings(const LaunchOptions& options);

// The ports of every rendezvous address, which no other socket of a process takes.
std::vector<int> rendezvous_ports(const Settings& s);

// Identifies this host and network namespace: processes with equal ids can use ipc://.
std::string host_id();
// This machine's identity for sharing cores: the kernel's boot id (/proc/sys/kernel/random/boot_id,
// the same in every network namespace and container of one running kernel); empty where unreadable.
std::string machine_id();
// The local address this host uses to reach host:port (no packet is sent), e.g. "127.0.0.1".
std::string local_address_towards(const std::string& host, int port);
// The numeric addresses `host` resolves to (getaddrinfo), each once; empty when it does not resolve.
std::vector<std::string> numeric_addresses(const std::string& host);

}  // namespace fast::runtime::zmq
