#pragma once
// Where the processes of `fast launch` run and meet: the hosts and the placement of the ranks on
// them, the rendezvous address, and the checks of the plan against --ports (docs/launch.md).

#include <string>
#include <utility>
#include <vector>

#include "hosts.hpp"
#include "launch.hpp"

namespace fast::cli {

constexpr int kMaxProcesses = 1024;  // processes of one launch

// Where the processes run and meet.
struct RunPlan {
  int processes = 0;
  std::vector<LaunchHost> hosts;             // empty: this host only
  std::vector<const LaunchHost*> placement;  // host of each rank (hosts given)
  std::string rendezvous;                    // HOST:PORT[,HOST:PORT...]
};

// The plan of `o` (validated): its hosts (--hosts, --hostfile) and the placement of the ranks, the
// rendezvous port (--port, else the lowest of --ports, else a free one on 127.0.0.1 for one host,
// 29400 across hosts) and its address(es). InvalidArgument for more processes than kMaxProcesses,
// a --port outside --ports, or a rendezvous port given on this host (--port, --ports) that cannot
// be listened on now; IoError when no free port is found.
RunPlan plan_run(const LaunchCommand& o);

// Process `rank`'s index among the processes placed on its host, and their number.
std::pair<int, int> local_place(const RunPlan& plan, int rank);

// The hosts that get processes, each with their number: "a (2), b (1)".
std::string describe_hosts(const RunPlan& plan);

// InvalidArgument when --ports is too small for the processes of the most crowded host, which
// listen on 2 ports each (data, heartbeats) besides the rendezvous's port (docs/launch.md, "Ports
// and firewalls"); a warning line ("" when none) when, across hosts, the direct streams (one more
// port each) would not all find one.
std::string port_range_warning(const LaunchCommand& o, const RunPlan& plan);

}  // namespace fast::cli
