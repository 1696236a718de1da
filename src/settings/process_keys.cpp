// The settings of multi-process runs (zmq), the last groups of the general settings' table
// (key_builders.hpp, general_keys()): how the processes find each other, whom they trust and the
// network they use. Declared as config_keys.cpp declares the others.

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fast/core/error.hpp"
#include "fast/core/port_range.hpp"
#include "fast/runtime/registry.hpp"
#include "key_builders.hpp"

namespace fast::settings::detail {

using training::TrainOptions;

namespace {

const std::vector<std::string> kTransports{"ipc", "tcp"};
const std::vector<std::string> kCollectives{"fast", "native"};
const std::vector<std::string> kWindows{"rma", "service"};

// `key`, a setting of how the processes find and reach each other (runtime::ProcessOptions): it
// changes nothing under a runtime that does not join them by FAST's rendezvous
// (RuntimeBackend::joins_by_rendezvous: mpi's launcher connects its ranks; threads and sim run in
// one process). Each process has its own (per_process): the rendezvous checks those that must agree.
ConfigKey rendezvous_key(ConfigKey key) {
  return applies_when(per_process(std::move(key)), [](const TrainOptions& o) -> std::optional<std::string> {
    if (o.runtime.empty() || runtime::find_runtime(o.runtime).joins_by_rendezvous) return std::nullopt;
    return fmt::format("runtime = {}", o.runtime);
  });
}

}  // namespace

// zmq: how the processes of a multi-process run find and trust each other (runtime::ProcessOptions,
// docs/launch.md). Left at their defaults, the runtime reads the FAST_* variable each names.
std::vector<ConfigKey> process_keys() {
  return {
      rendezvous_key(text_key(
          "rendezvous", KeyType::string, "HOST:PORT",
          "--runtime zmq: HOST:PORT of the rendezvous that assigns ranks and exchanges addresses and keys; "
          "further HOST:PORT after commas, on other hosts of the run, serve the rejoins of a run under way once "
          "no process of the earlier ones' hosts is live (default: FAST_RENDEZVOUS).",
          [](TrainOptions& o, const std::string& v) { o.process.rendezvous = v; },
          [](const TrainOptions& o) {
            return o.process.rendezvous.empty() ? std::string("$FAST_RENDEZVOUS") : o.process.rendezvous;
          })),
      rendezvous_key(declared_key(
          integer_declaration<int>(
              "world_size", "--runtime zmq: number of processes in the run, >= 1 (default: FAST_WORLD_SIZE).", 1),
          [](TrainOptions& o, const core::SettingValue& v) { o.process.world_size = integer_of<int>(v); },
          [](const TrainOptions& o) {
            return o.process.world_size <= 0 ? std::string("$FAST_WORLD_SIZE")
                                             : text(static_cast<long long>(o.process.world_size));
          })),
      rendezvous_key(declared_key(
          integer_declaration<int>("process_rank",
                                   "--runtime zmq: this process's index in [0, world_size); unset: the rendezvous "
                                   "assigns one in arrival order (default: FAST_PROCESS_RANK).",
                                   0),
          [](TrainOptions& o, const core::SettingValue& v) { o.process.process_rank = integer_of<int>(v); },
          [](const TrainOptions& o) {
            return o.process.process_rank < 0 ? std::string("$FAST_PROCESS_RANK")
                                              : text(static_cast<long long>(o.process.process_rank));
          })),
      rendezvous_key(FAST_INT_KEY("workers_per_process",
                                  "--runtime zmq: workers in each process (threads of it); the world has "
                                  "world_size x this workers.",
                                  process.workers_per_process, 1)),
  };
}

// zmq: the keys that admit the processes to the run, and how long they wait for each other.
std::vector<ConfigKey> trust_keys() {
  return {
      rendezvous_key(text_key(
          "key", KeyType::path, "a key pair file",
          "--runtime zmq: this process's CURVE key pair, from `fast keygen` (default: FAST_KEY_FILE).",
          [](TrainOptions& o, const std::string& v) { o.process.key_file = v; },
          [](const TrainOptions& o) {
            return o.process.key_file.empty() ? std::string("$FAST_KEY_FILE") : o.process.key_file.string();
          })),
      rendezvous_key(text_key(
          "allow", KeyType::path, "an allow-list file",
          "--runtime zmq: the public keys admitted to the run, one per line (default: FAST_ALLOW_FILE).",
          [](TrainOptions& o, const std::string& v) { o.process.allow_file = v; },
          [](const TrainOptions& o) {
            return o.process.allow_file.empty() ? std::string("$FAST_ALLOW_FILE") : o.process.allow_file.string();
          })),
      rendezvous_key(text_key(
          "insecure", KeyType::boolean, "true or false",
          "--runtime zmq: no authentication and no encryption between processes; warns (off unless given, or "
          "FAST_INSECURE=1 in the environment). A flag: --insecure.",
          [](TrainOptions& o, const std::string& v) { o.process.insecure = parse_bool(v, "insecure"); },
          [](const TrainOptions& o) { return std::string(o.process.insecure ? "true" : "false"); })),
      rendezvous_key(declared_key(
          FAST_NUMBER_DECLARATION(
              "peer_timeout",
              "--runtime zmq: seconds of silence after which a peer is lost (default: FAST_PEER_TIMEOUT).",
              .greater_than(0)),
          [](TrainOptions& o, const core::SettingValue& v) { o.process.peer_timeout_seconds = number_of(v); },
          [](const TrainOptions& o) {
            return o.process.peer_timeout_seconds < 0 ? std::string("$FAST_PEER_TIMEOUT")
                                                      : text(o.process.peer_timeout_seconds);
          })),
      rendezvous_key(declared_key(
          FAST_NUMBER_DECLARATION("rendezvous_timeout",
                                  "--runtime zmq: seconds to wait for every process at the rendezvous (default: "
                                  "FAST_RENDEZVOUS_TIMEOUT).",
                                  .greater_than(0)),
          [](TrainOptions& o, const core::SettingValue& v) { o.process.rendezvous_timeout_seconds = number_of(v); },
          [](const TrainOptions& o) {
            return o.process.rendezvous_timeout_seconds < 0 ? std::string("$FAST_RENDEZVOUS_TIMEOUT")
                                                            : text(o.process.rendezvous_timeout_seconds);
          })),
  };
}

// How the processes and workers exchange messages: the transport, the collectives, the windows and
// the addresses and ports of this process.
std::vector<ConfigKey> network_keys() {
  return {
      rendezvous_key(text_key(
          "transport", KeyType::string, one_of_text(kTransports, true),
          "--runtime zmq: tcp or ipc (processes of one host only); empty: tcp "
          "(default: FAST_TRANSPORT).",
          [](TrainOptions& o, const std::string& v) {
            o.process.transport = v.empty() ? v : one_of(v, kTransports, "transport");
          },
          [](const TrainOptions& o) {
            return o.process.transport.empty() ? std::string("$FAST_TRANSPORT") : o.process.transport;
          })),
      text_key(
          "collectives", KeyType::string, one_of_text(kCollectives, true),
          "fast (FAST's ring all-reduce, broadcast, all-gather and barrier over point-to-point messages) or native "
          "(the runtime's own: MPI_Allreduce and co. under --runtime mpi); empty: native under mpi, fast elsewhere "
          "(default: FAST_COLLECTIVES). The two give the same results up to the order of floating-point additions.",
          [](TrainOptions& o, const std::string& v) {
            o.collectives = v.empty() ? v : one_of(v, kCollectives, "collectives");
          },
          [](const TrainOptions& o) {
            return o.collectives.empty() ? std::string("$FAST_COLLECTIVES") : o.collectives;
          }),
      text_key(
          "windows", KeyType::string, one_of_text(kWindows, true),
          "where the one-sided windows of ps, easgd, adpsgd, gosgd and acid run: rma (MPI RMA under --runtime mpi: the "
          "requester applies each operation under the owner's lock, the owner takes no part) or service (the owner's "
          "service activity answers requests over messages, every runtime); empty: rma under mpi, service elsewhere "
          "(default: FAST_WINDOWS). Windows with a codec (compress) always use the service.",
          [](TrainOptions& o, const std::string& v) { o.windows = v.empty() ? v : one_of(v, kWindows, "windows"); },
          [](const TrainOptions& o) { return o.windows.empty() ? std::string("$FAST_WINDOWS") : o.windows; }),
      rendezvous_key(text_key(
          "host", KeyType::string, "an address; or empty",
          "--runtime zmq: the address this process binds and is reached at over tcp; empty: the address that reaches "
          "the rendezvous (default: FAST_HOST).",
          [](TrainOptions& o, const std::string& v) { o.process.host = v; },
          [](const TrainOptions& o) { return o.process.host.empty() ? std::string("$FAST_HOST") : o.process.host; })),
      rendezvous_key(text_key(
          "advertise", KeyType::string, "an address; or empty",
          "--runtime zmq: the address the other processes reach this one at, when it differs from the one bound "
          "(NAT, containers); empty: the address bound (default: FAST_ADVERTISE).",
          [](TrainOptions& o, const std::string& v) { o.process.advertise = v; },
          [](const TrainOptions& o) {
            return o.process.advertise.empty() ? std::string("$FAST_ADVERTISE") : o.process.advertise;
          })),
      rendezvous_key(text_key(
          "ports", KeyType::string, "LO-HI, 1 <= LO <= HI <= 65535; or empty",
          "--runtime zmq: LO-HI, the range every listening port of this process lies in (data, heartbeats, "
          "streams), for a firewall; empty: any (default: FAST_PORTS).",
          [](TrainOptions& o, const std::string& v) { o.process.ports = core::parse_port_range(v, "ports").text(); },
          [](const TrainOptions& o) {
            return o.process.ports.empty() ? std::string("$FAST_PORTS") : o.process.ports;
          })),
  };
}

}  // namespace fast::settings::detail
