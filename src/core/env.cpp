#include "fast/core/env.hpp"

#include <array>
#include <charconv>
#include <cstdlib>

#include "fast/core/error.hpp"

namespace fast::core {

namespace {
constexpr std::array kTable{
    EnvVar{"FAST_LOG_LEVEL", EnvType::string, "info", "Log verbosity on stderr: error, warn, info or debug."},
    EnvVar{"FAST_DATA_DIR", EnvType::path, "/usr/share/datasets/fashion-mnist",
           "Folder of the Fashion-MNIST gzip IDX files when no --data-dir is given."},
    EnvVar{"FAST_OP_TIMEOUT", EnvType::number, "600",
           "Seconds a blocking runtime operation (recv, collective step) may wait before TimeoutError."},
    EnvVar{"FAST_TORCH_THREADS", EnvType::integer, "0",
           "libtorch intra-op threads per process; 0 sizes them to the cores available per worker."},
    // The zmq runtime (docs/launch.md); `fast launch` sets the first five for the processes it starts.
    EnvVar{"FAST_RENDEZVOUS", EnvType::string, "", "zmq runtime: HOST:PORT where the processes of a run meet."},
    EnvVar{"FAST_WORLD_SIZE", EnvType::integer, "0", "zmq runtime: number of processes in the run."},
    EnvVar{"FAST_PROCESS_RANK", EnvType::integer, "-1",
           "zmq runtime: this process's rank; -1: assigned by the rendezvous in arrival order."},
    EnvVar{"FAST_KEY_FILE", EnvType::path, "", "zmq runtime: this process's CURVE key pair (fast keygen)."},
    EnvVar{"FAST_ALLOW_FILE", EnvType::path, "",
           "zmq runtime: public keys admitted to the run, one per line, the rendezvous host's first."},
    EnvVar{"FAST_INSECURE", EnvType::integer, "0",
           "zmq runtime: 1 turns authentication and encryption off (warns); never on an untrusted network."},
    EnvVar{"FAST_PEER_TIMEOUT", EnvType::number, "5",
           "zmq runtime: seconds without a message or heartbeat after which a peer process is lost."},
    EnvVar{"FAST_RENDEZVOUS_TIMEOUT", EnvType::number, "60",
           "zmq runtime: seconds to wait for every process at the rendezvous."},
    EnvVar{"FAST_TRANSPORT", EnvType::string, "",
           "zmq runtime: ipc or tcp; empty: ipc between processes of one host and network namespace, else tcp."},
    EnvVar{"FAST_HOST", EnvType::string, "",
           "zmq runtime: address this process binds and is reached at over tcp; empty: the one that reaches the rendezvous."},
};

const EnvVar& lookup(std::string_view name) {
  for (const EnvVar& v : kTable)
    if (v.name == name) return v;
  FAST_THROW(InvalidUsage, "environment variable {} is not in FAST's table", name);
}
}  // namespace

std::span<const EnvVar> env_table() { return kTable; }

std::string_view env_type_name(EnvType type) {
  switch (type) {
    case EnvType::string: return "string";
    case EnvType::integer: return "integer";
    case EnvType::number: return "number";
    case EnvType::path: return "path";
  }
  return "?";
}

std::string env_string(std::string_view name) {
  const EnvVar& v = lookup(name);
  const char* set = std::getenv(std::string(v.name).c_str());
  return set != nullptr ? std::string(set) : std::string(v.default_value);
}

long long env_int(std::string_view name) {
  const std::string text = env_string(name);
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  FAST_ENFORCE(ec == std::errc() && end == text.data() + text.size(),
               "environment variable {}: expected an integer, got '{}'", name, text);
  return value;
}

double env_number(std::string_view name) {
  const std::string text = env_string(name);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  FAST_ENFORCE(!text.empty() && end == text.c_str() + text.size(),
               "environment variable {}: expected a number, got '{}'", name, text);
  return value;
}

}  // namespace fast::core
