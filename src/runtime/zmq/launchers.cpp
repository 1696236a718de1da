// `fast launch` (tools/fast/launch.cpp) sets FAST_WORLD_SIZE, FAST_PROCESS_RANK, FAST_RENDEZVOUS,
// FAST_LAUNCHED=1 and the key files; torchrun (and anything that starts processes as it does) sets
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, and no keys.
#include "launchers.hpp"

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "fast/core/error.hpp"

namespace fast::runtime::zmq {

namespace {

constexpr int kMaxProcesses = 1 << 20;

bool is_set(const char* v) { return v != nullptr && *v != '\0'; }

// FAST_RENDEZVOUS with FAST_WORLD_SIZE: a run of `fast launch`, or processes started by hand with them.
std::optional<LauncherWorld> fast_launch(const Environment& env) {
  const char* rendezvous = env("FAST_RENDEZVOUS");
  const char* world = env("FAST_WORLD_SIZE");
  if (!is_set(rendezvous) || !is_set(world)) return std::nullopt;
  LauncherWorld w;
  w.world = launcher_integer("FAST_WORLD_SIZE", world, 1, kMaxProcesses);
  const char* rank = env("FAST_PROCESS_RANK");
  w.rank = is_set(rank) ? launcher_integer("FAST_PROCESS_RANK", rank, -1, w.world - 1) : -1;
  const char* launched = env("FAST_LAUNCHED");
  const char* local_world = env("FAST_LOCAL_WORLD_SIZE");
  const char* local_rank = env("FAST_LOCAL_RANK");
  if (is_set(local_world)) {  // fast launch, on one host or across hosts (its placement)
    w.local_world = launcher_integer("FAST_LOCAL_WORLD_SIZE", local_world, 0, w.world);
    w.local_rank = is_set(local_rank) && w.local_world > 0
                       ? launcher_integer("FAST_LOCAL_RANK", local_rank, -1, w.local_world - 1)
                       : -1;
  } else if (is_set(launched) && std::strcmp(launched, "0") != 0) {  // an older launch: every process on this host
    w.local_rank = w.rank;
    w.local_world = w.world;
  } else {
    w.local_rank = -1;
  }
  w.rendezvous = rendezvous;
  w.evidence = launcher_evidence(
      env, {"FAST_WORLD_SIZE", "FAST_PROCESS_RANK", "FAST_RENDEZVOUS", "FAST_LOCAL_RANK", "FAST_LOCAL_WORLD_SIZE"});
  return w;
}

// RANK with WORLD_SIZE: torchrun's processes. MASTER_ADDR:MASTER_PORT is the rendezvous (the process
// of rank 0 serves it), except where torchrun's agent already holds that port
// (TORCHELASTIC_USE_AGENT_STORE=True, its static rendezvous): then the port after it. FAST_RENDEZVOUS
// overrides both.
std::optional<LauncherWorld> torchrun(const Environment& env) {
  const char* rank = env("RANK");
  const char* world = env("WORLD_SIZE");
  if (!is_set(rank) || !is_set(world)) return std::nullopt;
  LauncherWorld w;
  w.evidence = launcher_evidence(env, {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                       "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE"});
  w.world = launcher_integer("WORLD_SIZE", world, 1, kMaxProcesses);
  w.rank = launcher_integer("RANK", rank, 0, w.world - 1);
  const char* local_world = env("LOCAL_WORLD_SIZE");
  w.local_world = is_set(local_world) ? launcher_integer("LOCAL_WORLD_SIZE", local_world, 1, w.world) : 0;
  const char* local_rank = env("LOCAL_RANK");
  w.local_rank = is_set(local_rank) ? launcher_integer("LOCAL_RANK", local_rank, 0,
                                                       w.local_world > 0 ? w.local_world - 1 : w.world - 1)
                                    : -1;
  w.brings_keys = false;
  if (const char* own = env("FAST_RENDEZVOUS"); is_set(own)) {
    w.rendezvous = own;
    w.evidence += fmt::format(" FAST_RENDEZVOUS={}", own);
    return w;
  }
  const char* addr = env("MASTER_ADDR");
  const char* port = env("MASTER_PORT");
  FAST_ENFORCE(is_set(addr) && is_set(port),
               "environment: RANK and WORLD_SIZE are set as torchrun sets them ({}), but not MASTER_ADDR and "
               "MASTER_PORT; expected the host and port where the processes meet (or FAST_RENDEZVOUS=HOST:PORT)",
               w.evidence);
  int p = launcher_integer("MASTER_PORT", port, 1, 65535);
  const char* agent = env("TORCHELASTIC_USE_AGENT_STORE");
  if (is_set(agent) && std::strcmp(agent, "True") == 0) {
    FAST_ENFORCE(p < 65535,
                 "environment variable MASTER_PORT: torchrun's agent holds port {}, and FAST meets on the "
                 "next one, which does not exist; set FAST_RENDEZVOUS=HOST:PORT",
                 p);
    ++p;
  }
  const std::string host = addr;
  w.rendezvous = host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, p) : fmt::format("{}:{}", host, p);
  return w;
}

constexpr LauncherSignature kLaunchers[] = {
    {.name = "fast launch", .precedence = 10, .recognise = fast_launch},
    {.name = "torchrun", .precedence = 30, .recognise = torchrun},
};

}  // namespace

std::span<const LauncherSignature> launchers() { return kLaunchers; }

}  // namespace fast::runtime::zmq
