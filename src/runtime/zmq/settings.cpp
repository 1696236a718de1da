#include "settings.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "environment.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/file_status.hpp"
#include "fast/core/log.hpp"
#include "fast/core/parse.hpp"
#include "fast/runtime/environment.hpp"
#include "fast/runtime/zmq/keys.hpp"

namespace fast::runtime::zmq {

namespace {

RendezvousAddress parse_address(const std::string& text) {
  const auto colon = text.rfind(':');
  FAST_ENFORCE(colon != std::string::npos && colon > 0 && colon + 1 < text.size(),
               "rendezvous: expected HOST:PORT, got '{}'", text);
  RendezvousAddress a{.host = text.substr(0, colon)};
  if (a.host.size() > 2 && a.host.front() == '[') a.host = a.host.substr(1, a.host.size() - 2);
  a.port = core::parse_int<int>(text.substr(colon + 1), "rendezvous: the port after ':'", 1, 65535);
  return a;
}

// HOST:PORT[,HOST:PORT...]: the first is where the processes meet, the others fallbacks.
void parse_rendezvous(const std::string& text, Settings& s) {
  FAST_ENFORCE(!text.empty(),
               "rendezvous: expected HOST:PORT (--rendezvous or FAST_RENDEZVOUS), got nothing: the zmq runtime runs "
               "one worker group per process; start the processes with `fast launch -n N -- COMMAND`, or give each "
               "--rendezvous HOST:PORT, --world-size N and --process-rank R (in a program: ProcessOptions::rendezvous, "
               "world_size and process_rank; docs/launch.md)");
  std::vector<RendezvousAddress> list;
  for (std::size_t begin = 0; begin <= text.size();) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const RendezvousAddress a = parse_address(text.substr(begin, end - begin));
    for (const RendezvousAddress& b : list)
      FAST_ENFORCE(a.host != b.host || a.port != b.port, "rendezvous: the address {}:{} is given twice in '{}'", a.host,
                   a.port, text);
    list.push_back(a);
    begin = end + 1;
  }
  s.rendezvous_host = list[0].host;
  s.rendezvous_port = list[0].port;
  s.rendezvous_fallbacks.assign(list.begin() + 1, list.end());
  for (RendezvousAddress& a : s.rendezvous_fallbacks) a.numeric = numeric_addresses(a.host);
}

// checking: files that a second reader would not find whole (core::readable_twice: /dev/stdin, a
// pipe; fast launch --hosts hands the key over on stdin) are left to the run, unread.
void load_keys(const ProcessOptions& p, Settings& s, bool checking) {
  std::filesystem::path key =
      p.key_file.empty() ? std::filesystem::path(core::env_string(zmq_environment(), "FAST_KEY_FILE")) : p.key_file;
  std::filesystem::path allow = p.allow_file.empty()
                                    ? std::filesystem::path(core::env_string(zmq_environment(), "FAST_ALLOW_FILE"))
                                    : p.allow_file;
  FAST_ENFORCE(!key.empty(),
               "key: the zmq runtime authenticates its peers and needs this process's key pair (--key FILE or "
               "FAST_KEY_FILE; make one with `fast keygen`), got none; --insecure turns authentication off");
  const std::string inline_keys =
      allow.empty() ? core::env_string(zmq_environment(), "FAST_ALLOW_KEYS") : std::string();
  FAST_ENFORCE(!allow.empty() || !inline_keys.empty(),
               "allow: the zmq runtime needs the public keys it admits (--allow FILE, FAST_ALLOW_FILE or "
               "FAST_ALLOW_KEYS), got none");
  if (!checking || core::readable_twice(key)) {
    const KeyPair pair = read_key_file(key);
    s.public_key = pair.public_key;
    s.secret_key = pair.secret_key;
  }
  if (!allow.empty()) {
    if (checking && !core::readable_twice(allow)) return;
    for (const AllowedKey& k : read_allow_file(allow)) s.allowed_keys.push_back(k.public_key);
    return;
  }
  for (std::size_t begin = 0; begin <= inline_keys.size();) {  // public keys, comma-separated
    const std::size_t end = std::min(inline_keys.find(',', begin), inline_keys.size());
    const std::string k = inline_keys.substr(begin, end - begin);
    FAST_ENFORCE(valid_z85_key(k),
                 "FAST_ALLOW_KEYS: expected public keys of 40 Z85 characters separated by commas, got '{}' as key {}",
                 k, s.allowed_keys.size() + 1);
    s.allowed_keys.push_back(k);
    begin = end + 1;
  }
}

}  // namespace

namespace {

// resolve_settings without its log: reads the options, the environment and the key files (checking:
// only those that can be read again, load_keys).
Settings read_settings(const LaunchOptions& options, bool checking) {
  const ProcessOptions& p = options.process;
  Settings s;
  s.shared_settings = p.shared_settings;
  parse_rendezvous(p.rendezvous.empty() ? core::env_string(zmq_environment(), "FAST_RENDEZVOUS") : p.rendezvous, s);
  s.world_size =
      p.world_size > 0 ? p.world_size : static_cast<int>(core::env_int(zmq_environment(), "FAST_WORLD_SIZE"));
  FAST_ENFORCE(s.world_size >= 1,
               "world-size: expected the number of processes >= 1 (--world-size or FAST_WORLD_SIZE), got {}",
               s.world_size);
  s.workers_per_process = p.workers_per_process;
  FAST_ENFORCE(s.workers_per_process >= 1, "workers-per-process: expected >= 1, got {}", s.workers_per_process);
  s.max_processes = s.world_size;
  if (p.max_workers > 0) {
    FAST_ENFORCE(options.tolerate_lost_workers,
                 "max-workers: set to {} in a run that does not go on without a worker; expected a run that "
                 "tolerates lost workers (vacant ranks count as lost until a process takes them)",
                 p.max_workers);
    const long long starting = static_cast<long long>(s.world_size) * s.workers_per_process;
    FAST_ENFORCE(
        p.max_workers >= starting && p.max_workers % s.workers_per_process == 0 &&
            p.max_workers / s.workers_per_process <= kMaxGrowthProcesses,
        "max-workers: expected a multiple of workers-per-process ({}) from the {} starting workers (world-size "
        "{} x {}) to {} ({} processes), got {}",
        s.workers_per_process, starting, s.world_size, s.workers_per_process,
        static_cast<long long>(kMaxGrowthProcesses) * s.workers_per_process, kMaxGrowthProcesses, p.max_workers);
    s.max_processes = p.max_workers / s.workers_per_process;
  }
  s.process_rank =
      p.process_rank >= 0 ? p.process_rank : static_cast<int>(core::env_int(zmq_environment(), "FAST_PROCESS_RANK"));
  FAST_ENFORCE(s.process_rank >= -1 && s.process_rank < s.max_processes,
               "process-rank: expected -1 (assigned) or a rank in [0, {}), got {}", s.max_processes, s.process_rank);
  s.insecure = p.insecure || core::env_int(zmq_environment(), "FAST_INSECURE") != 0;
  if (!s.insecure) load_keys(p, s, checking);
  // One key admitted: every process holds it, every address's server too. (None: an allow file left
  // to the run, load_keys; a file read holds at least one.)
  FAST_ENFORCE(s.insecure || s.allowed_keys.size() <= 1 || s.allowed_keys.size() > s.rendezvous_fallbacks.size(),
               "rendezvous: {} addresses, so the allow-list's first {} keys must be the keys of their hosts, in the "
               "same order (or the allow-list must hold the run's one key); it has {}",
               s.rendezvous_fallbacks.size() + 1, s.rendezvous_fallbacks.size() + 1, s.allowed_keys.size());
  s.peer_timeout =
      p.peer_timeout_seconds >= 0 ? p.peer_timeout_seconds : core::env_number(zmq_environment(), "FAST_PEER_TIMEOUT");
  FAST_ENFORCE(s.peer_timeout > 0, "peer-timeout: expected seconds > 0, got {}", s.peer_timeout);
  s.rendezvous_timeout = p.rendezvous_timeout_seconds >= 0
                             ? p.rendezvous_timeout_seconds
                             : core::env_number(zmq_environment(), "FAST_RENDEZVOUS_TIMEOUT");
  FAST_ENFORCE(s.rendezvous_timeout > 0, "rendezvous-timeout: expected seconds > 0, got {}", s.rendezvous_timeout);
  s.op_timeout = options.op_timeout_seconds >= 0 ? options.op_timeout_seconds
                                                 : core::env_number(runtime_environment(), "FAST_OP_TIMEOUT");
  s.transport = p.transport.empty() ? core::env_string(zmq_environment(), "FAST_TRANSPORT") : p.transport;
  FAST_ENFORCE(s.transport.empty() || s.transport == "ipc" || s.transport == "tcp",
               "transport: expected ipc, tcp or empty (automatic), got '{}'", s.transport);
  s.host = p.host.empty() ? core::env_string(zmq_environment(), "FAST_HOST") : p.host;
  if (s.host.empty()) s.host = local_address_towards(s.rendezvous_host, s.rendezvous_port);
  s.advertise = p.advertise.empty() ? core::env_string(zmq_environment(), "FAST_ADVERTISE") : p.advertise;
  if (s.advertise.empty()) s.advertise = s.host;
  s.ports = core::parse_port_range(p.ports.empty() ? core::env_string(zmq_environment(), "FAST_PORTS") : p.ports,
                                   "ports (FAST_PORTS)");
  s.tolerate_lost = options.tolerate_lost_workers;
  s.restarted = core::env_int(zmq_environment(), "FAST_RESTARTED") == 1;
  const long long ring = core::env_int(zmq_environment(), "FAST_SHM_BYTES");
  FAST_ENFORCE(ring == -1 || ring == 0 || (ring >= (64ll << 10) && ring <= (64ll << 30) && ring % 64 == 0),
               "FAST_SHM_BYTES: expected -1 (automatic), 0 (no shared memory) or a multiple of 64 from 65536 to "
               "68719476736, got {}",
               ring);
  s.shared_ring_bytes = ring;
  // Ranges: checked by env_int against the table (environment.cpp).
  s.poll_seconds = static_cast<double>(core::env_int(zmq_environment(), "FAST_POLL_US")) * 1e-6;
  s.streams = core::env_int(zmq_environment(), "FAST_STREAMS") == 1;
  s.seal_threads = core::env_int(zmq_environment(), "FAST_SEAL_THREADS");
  s.aes_library = choose_aes_library(core::env_string(zmq_environment(), "FAST_AES_LIBRARY"));
  s.read_alongside = static_cast<int>(core::env_int(zmq_environment(), "FAST_READ_ALONGSIDE"));
  return s;
}

}  // namespace

Settings resolve_settings(const LaunchOptions& options) {
  Settings s = read_settings(options, false);
  if (s.insecure)
    core::log(core::LogLevel::warn,
              "zmq runtime: --insecure: peers are NOT authenticated and traffic is NOT encrypted; anyone who "
              "reaches this process's ports can join the run or alter it");
  return s;
}

void check_settings(const LaunchOptions& options) { (void)read_settings(options, true); }

std::string host_id() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::error_code ec;
  const auto ns = std::filesystem::read_symlink("/proc/self/ns/net", ec);
  return std::string(name) + "/" + (ec ? std::string("?") : ns.string());
}

std::string machine_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::vector<int> rendezvous_ports(const Settings& s) {
  std::vector<int> ports{s.rendezvous_port};
  for (const RendezvousAddress& a : s.rendezvous_fallbacks) ports.push_back(a.port);
  return ports;
}

std::vector<std::string> numeric_addresses(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return {};
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
  std::vector<std::string> list;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* addr = a->ai_family == AF_INET
                           ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
                           : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) && inet_ntop(a->ai_family, addr, text, sizeof(text)) &&
        std::find(list.begin(), list.end(), text) == list.end())
      list.emplace_back(text);
  }
  return list;
}

std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  FAST_ENFORCE_AS(core::IoError, rc == 0, "rendezvous: cannot resolve host '{}': {}", host, gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
  const int fd = socket(found->ai_family, SOCK_DGRAM, 0);
  FAST_ENFORCE_AS(core::IoError, fd >= 0, "rendezvous: cannot open a socket to find the local address");
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  const bool ok = connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  close(fd);
  FAST_ENFORCE_AS(core::IoError, ok, "rendezvous: no route from this host to '{}' (set --host or FAST_HOST)", host);
  char text[INET6_ADDRSTRLEN] = {};
  const void* addr = local.ss_family == AF_INET
                         ? static_cast<const void*>(&reinterpret_cast<sockaddr_in&>(local).sin_addr)
                         : static_cast<const void*>(&reinterpret_cast<sockaddr_in6&>(local).sin6_addr);
  inet_ntop(local.ss_family, addr, text, sizeof(text));
  return text;
}

}  // namespace fast::runtime::zmq
