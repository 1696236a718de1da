// The `zmq` runtime's registry entry and launch (runtime/registry.hpp): settings, authentication,
// the data and heartbeat sockets, the rendezvous, the transport, this process's workers, the end of the run.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "../deliver.hpp"
#include "../engine/local_world.hpp"
#include "../engine/transport_run.hpp"
#include "authenticator.hpp"
#include "environment.hpp"
#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/port_range.hpp"
#include "fast/runtime/registry.hpp"
#include "launchers.hpp"
#include "rendezvous.hpp"
#include "transport.hpp"

namespace fast::runtime::zmq {

namespace {

// What differs between the data and the heartbeat ROUTERs.
struct RouterKind {
  const char* role;        // names the ipc:// socket file: "data" or "pulse"
  std::uint64_t affinity;  // the context's I/O thread(s) of its connections (a bit mask)
  int rcvhwm;              // messages queued per connection before ZeroMQ stops reading it; 0: no limit
  int linger_ms;           // how long closing waits for its unsent replies
};

// Data: never stop reading a peer (the frames are the run's), and let the last replies (byes) go.
constexpr RouterKind kDataRouter{"data", ZmqTransport::kDataAffinity, 0, 2000};
// Heartbeats: a few per peer at most (a peer's beyond are dropped at its side, see
// make_pulse_dealer), and nothing to send on close.
constexpr RouterKind kPulseRouter{"pulse", ZmqTransport::kPulseAffinity, ZmqTransport::kPulseBacklog, 0};

// Binds `router` on tcp to settings.host, on a port of settings.ports (any port without a range)
// but the rendezvous addresses'; returns the endpoint peers are given: the advertised address
// (FAST_ADVERTISE) with the port bound. IoError naming the range when no port of it is free.
std::string bind_tcp(::zmq::socket_t& router, const Settings& s, const char* role) {
  std::string failure = "every port is taken";
  bool bound = false;
  for (const int port : core::ports_to_try(s.ports, rendezvous_ports(s))) {
    try {
      router.bind(tcp_address(s.host, port == 0 ? "*" : std::to_string(port)));
      bound = true;
      break;
    } catch (const ::zmq::error_t& e) {
      failure = e.what();
      if (e.num() != EADDRINUSE) break;
    }
  }
  FAST_ENFORCE_AS(
      core::IoError, bound, "zmq runtime: cannot listen for {} on {}{}: {}", role, s.host,
      s.ports.any() ? std::string() : fmt::format(" in the port range {} (--ports, FAST_PORTS)", s.ports.text()),
      failure);
  const std::string endpoint = router.get(::zmq::sockopt::last_endpoint);
  return tcp_address(s.advertise, endpoint.substr(endpoint.rfind(':') + 1));
}

// A ROUTER of this process bound on ipc:// (a fresh path under the temporary directory, named
// after kind.role) and on tcp:// (bind_tcp: settings.host, a port of settings.ports); returns it and writes its
// two endpoints.
::zmq::socket_t bind_router(::zmq::context_t& context, const Settings& s, const RouterKind& kind,
                            std::string& ipc_endpoint, std::string& tcp_endpoint) {
  ::zmq::socket_t router(context, ::zmq::socket_type::router);
  router.set(::zmq::sockopt::affinity, kind.affinity);
  router.set(::zmq::sockopt::linger, kind.linger_ms);
  router.set(::zmq::sockopt::rcvhwm, kind.rcvhwm);
  // A process that takes a lost rank back connects with its predecessor's routing id ("p<rank>"):
  // the new connection wins should the old one still be open.
  router.set(::zmq::sockopt::router_handover, 1);
  if (!s.insecure) {
    router.set(::zmq::sockopt::curve_server, 1);
    router.set(::zmq::sockopt::curve_secretkey, s.secret_key);
  }
  std::random_device random;
  const auto dir = std::filesystem::temp_directory_path();
  ipc_endpoint = fmt::format("ipc://{}/fast-{}-{}-{:08x}.sock", dir.string(), getpid(), kind.role, random());
  router.bind(ipc_endpoint);
  tcp_endpoint = bind_tcp(router, s, kind.role);
  return router;
}

ProcessInfo describe_self(const Settings& s) {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return {.rank = s.process_rank,
          .workers = s.workers_per_process,
          .host_id = host_id(),
          .hostname = name,
          .machine_id = machine_id(),
          .public_key = s.public_key,
          .pid = static_cast<long>(getpid()),
          .shared_memory = s.shared_ring_bytes != 0};
}

// First error of the local workers, else the loss that aborted the run, as one message.
std::string first_error(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      return x.what();
    } catch (...) {
      return "unknown exception";
    }
  }
  return {};
}

double run_zmq(const LaunchOptions& options, const WorkerFn& fn) {
  const Settings s = resolve_settings(options);
  ::zmq::context_t context;
  // Two I/O threads: one carries the data, the other the heartbeats, so that no message, however
  // large or slow, holds a heartbeat back (transport.hpp).
  context.set(::zmq::ctxopt::io_threads, 2);
  std::unique_ptr<Authenticator> auth;
  if (!s.insecure) auth = std::make_unique<Authenticator>(context, s.allowed_keys);
  ProcessInfo self = describe_self(s);
  ::zmq::socket_t router = bind_router(context, s, kDataRouter, self.ipc_endpoint, self.tcp_endpoint);
  struct RemoveSocketFile {
    std::string path;
    ~RemoveSocketFile() { std::filesystem::remove(path); }
  } remove_ipc{self.ipc_endpoint.substr(6)};
  ::zmq::socket_t pulse = bind_router(context, s, kPulseRouter, self.pulse_ipc_endpoint, self.pulse_tcp_endpoint);
  RemoveSocketFile remove_pulse_ipc{self.pulse_ipc_endpoint.substr(6)};
  core::log(core::LogLevel::info, "zmq runtime: pid {} listens on {} and {} (heartbeats: {} and {}){}", self.pid,
            self.tcp_endpoint, self.ipc_endpoint, self.pulse_tcp_endpoint, self.pulse_ipc_endpoint,
            s.insecure ? " (insecure)" : " (CURVE)");

  RendezvousResult meeting = rendezvous(context, s, self, auth.get());
  const ProcessInfo me = meeting.table[static_cast<std::size_t>(meeting.process_rank)];
  core::log(meeting.rejoining ? core::LogLevel::warn : core::LogLevel::debug,
            "zmq runtime: {} runs workers [{}, {}) of {}{}", me.where(), me.first_worker, me.first_worker + me.workers,
            s.max_processes * s.workers_per_process, meeting.rejoining ? ", rejoining the run under way" : "");
  if (s.max_processes > s.world_size && !meeting.rejoining)
    core::log(core::LogLevel::info,
              "zmq runtime: the run starts with {} of {} workers; workers [{}, {}) are vacant until processes join "
              "(--max-workers; a process started with FAST_RESTARTED=1 takes the lowest)",
              s.world_size * s.workers_per_process, s.max_processes * s.workers_per_process,
              s.world_size * s.workers_per_process, s.max_processes * s.workers_per_process);
  FAST_ENFORCE(!meeting.rejoining || s.tolerate_lost,
               "zmq runtime: this process rejoins a run under way, which only asynchronous runs allow");
  if (options.placed) options.placed(workers_on_machine(meeting.table, meeting.process_rank));

  ZmqTransport transport(context, s, meeting.table, meeting.process_rank, std::move(router), std::move(pulse));
  // Runs that go on without a lost process can take one back: the rendezvous server stays open.
  // Others take nobody in: their rendezvous port closes now (the answers it sent leave within its
  // linger), rather than listen, unread, until the run ends.
  if (s.tolerate_lost && meeting.desk) transport.serve_rejoins(std::move(*meeting.desk));
  meeting.desk.reset();
  transport.inherit_membership(meeting.lost_workers, meeting.rejoined_workers);
  transport.set_desk_process(meeting.desk_process);
  engine::LocalWorld world({.world_size = s.max_processes * s.workers_per_process,
                            .first_rank = me.first_worker,
                            .local_size = me.workers,
                            .joining = meeting.rejoining},
                           s.op_timeout, "zmq", &transport);
  return engine::run_over_transport(world, fn,
                                    {.tolerate_lost = s.tolerate_lost,
                                     .start = [&](const engine::LossFn& on_lost) { transport.start(world, on_lost); },
                                     .finish =
                                         [&](const std::vector<std::exception_ptr>& errors) {
                                           // A process that was never admitted waits for nobody.
                                           transport.finish(
                                               first_error(errors),
                                               detail::first_error_of<core::NotAdmitted>(errors) ? 0 : s.op_timeout);
                                           transport.stop();
                                         }});
}

}  // namespace

RuntimeBackend backend() {
  return {.name = "zmq",
          .description =
              "workers as processes on one or many hosts (fast launch, --rendezvous), ZeroMQ ipc:// and "
              "tcp://, CURVE-authenticated, heartbeats",
          .launch = run_zmq,
          .check = check_settings,
          .multi_process = true,
          .loses_workers = true,
          .takes_new_processes = true,
          .joins_by_rendezvous = true,
          .environment = zmq_environment(),
          .launchers = launchers()};
}

}  // namespace fast::runtime::zmq
