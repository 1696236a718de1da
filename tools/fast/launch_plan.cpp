#include "launch_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "fast/core/counted.hpp"
#include "fast/core/error.hpp"
#include "fast/core/port_range.hpp"
#include "fast/runtime/zmq/keys.hpp"
#include "fast/runtime/zmq/ports.hpp"

namespace fast::cli {

namespace {

namespace keys = fast::runtime::zmq;

// "HOST:PORT", HOST in brackets when it is an IPv6 address.
std::string host_port(const std::string& host, int port) {
  return host.find(':') != std::string::npos && host.front() != '[' ? fmt::format("[{}]:{}", host, port)
                                                                    : fmt::format("{}:{}", host, port);
}

// A port for the rendezvous: --port, else the lowest of --ports, else a free one on 127.0.0.1 (one
// host) or kRemoteRendezvousPort (across hosts, where this host cannot tell which port is free).
constexpr int kRemoteRendezvousPort = 29400;

}  // namespace

RunPlan plan_run(const LaunchCommand& o) {
  RunPlan plan;
  if (!o.hosts.empty()) plan.hosts = parse_hosts(o.hosts);
  if (!o.hostfile.empty()) plan.hosts = read_hostfile(o.hostfile);
  int slots = 0;
  for (const LaunchHost& h : plan.hosts) slots += h.slots;
  plan.processes = o.processes > 0 ? o.processes : slots;
  FAST_ENFORCE(plan.processes <= kMaxProcesses, "fast launch: the hosts hold {} slots; at most {} processes", slots,
               kMaxProcesses);
  if (!plan.hosts.empty()) plan.placement = place_processes(plan.hosts, plan.processes);
  const core::PortRange range = core::parse_port_range(o.ports, "fast launch: " + o.ports_source);
  const int port = o.port != 0          ? o.port
                   : !range.any()       ? range.low
                   : plan.hosts.empty() ? keys::free_loopback_port()
                                        : kRemoteRendezvousPort;
  FAST_ENFORCE(range.any() || (port >= range.low && port <= range.high),
               "fast launch: --port {} lies outside {} {}; the rendezvous port must be inside the range", port,
               o.ports_source, range.text());
  if (plan.hosts.empty() && (o.port != 0 || !range.any())) {  // a port given: taken now, the run would wait
    const std::string taken = keys::loopback_port_taken(port);
    FAST_ENFORCE(taken.empty(),
                 "fast launch: {}: the rendezvous port 127.0.0.1:{} cannot be listened on now ({}); give another{}",
                 o.port != 0 ? fmt::format("--port {}", o.port) : fmt::format("{} {}", o.ports_source, range.text()),
                 port, taken, o.port != 0 ? ", or 0 for a free one" : " range, or --port inside it");
  }
  const std::string host = plan.hosts.empty() ? "127.0.0.1" : plan.placement.front()->address;
  plan.rendezvous = host_port(host, port);
  // Across hosts, every other host's address too (once each, in rank order): where the rejoins of a
  // run under way are served once no process of the earlier hosts is live. Each address needs its
  // host's key, which an allow-list of one key (launch's own, or one given) is for every host.
  const bool one_key = o.insecure || o.allow_file.empty() || keys::read_allow_file(o.allow_file).size() == 1;
  std::vector<std::string> listed{host};
  for (const LaunchHost* h : plan.placement)
    if (one_key && std::find(listed.begin(), listed.end(), h->address) == listed.end()) {
      listed.push_back(h->address);
      plan.rendezvous += "," + host_port(h->address, port);
    }
  return plan;
}

std::pair<int, int> local_place(const RunPlan& plan, int rank) {
  if (plan.placement.empty()) return {rank, plan.processes};  // this host only
  const std::string& name = plan.placement[static_cast<std::size_t>(rank)]->name;
  int index = 0, count = 0;
  for (int r = 0; r < plan.processes; ++r) {
    if (plan.placement[static_cast<std::size_t>(r)]->name != name) continue;
    if (r < rank) ++index;
    ++count;
  }
  return {index, count};
}

std::string describe_hosts(const RunPlan& plan) {
  std::string text;
  for (const LaunchHost& h : plan.hosts) {
    const auto placed = std::count(plan.placement.begin(), plan.placement.end(), &h);
    if (placed > 0) text += fmt::format("{}{} ({})", text.empty() ? "" : ", ", h.name, placed);
  }
  return text;
}

namespace {
constexpr int kPortsPerProcess = 2;  // data, heartbeats
}  // namespace

std::string port_range_warning(const LaunchCommand& o, const RunPlan& plan) {
  const core::PortRange range = core::parse_port_range(o.ports, "fast launch: " + o.ports_source);
  if (range.any()) return "";
  int most = 0;
  for (int rank = 0; rank < plan.processes; ++rank) most = std::max(most, local_place(plan, rank).second);
  const int spare = range.high - range.low;  // the rendezvous takes one port of the range
  FAST_ENFORCE(
      spare >= kPortsPerProcess * most,
      "fast launch: {} {} holds {} ports, too few for {} on one host: each listens on {} ports (data, "
      "heartbeats) besides the rendezvous's port; give at least {} ports ({} for direct streams between hosts)",
      o.ports_source, range.text(), spare + 1, core::processes(most), kPortsPerProcess, kPortsPerProcess * most + 1,
      (kPortsPerProcess + 1) * most + 1);
  if (plan.hosts.empty() || spare >= (kPortsPerProcess + 1) * most) return "";
  return fmt::format(
      "warning: {} {} holds {} ports: too few for a direct stream port for each of {} on one host; those "
      "without one send through ZeroMQ (give {} ports for all of them)",
      o.ports_source, range.text(), spare + 1, core::processes(most), (kPortsPerProcess + 1) * most + 1);
}

}  // namespace fast::cli
