#pragma once
// The small simulated cluster of the sim tests that lose hosts (lost_peers_test, elastic_test):
// `hosts` hosts of 1 Gflop/s on a star of 100 MB/s links with 1 ms of latency, so that a computation
// of F flops takes F / 1e9 simulated seconds and a failure's instant falls where the test puts it.

#include <cstddef>

#include "fast/runtime/cluster.hpp"

namespace fast::testing {

inline runtime::Cluster star_cluster(int hosts) {
  runtime::Cluster c;
  c.hosts = hosts;
  c.speeds.assign(static_cast<std::size_t>(hosts), 1e9);
  c.bandwidth = 1e8;
  c.latency = 1e-3;
  return c;
}

}  // namespace fast::testing
