#pragma once
// Builds the SimGrid platform of a Cluster inside the current Engine and returns its hosts in
// index order (generated platforms: host-0, host-1, ...; XML platforms: every host, in natural
// name order, so host-2 comes before host-10).

#include <simgrid/s4u/Host.hpp>

#include <vector>

#include "fast/runtime/cluster.hpp"

namespace fast::runtime::sim {

std::vector<simgrid::s4u::Host*> build_platform(const Cluster& cluster);

}  // namespace fast::runtime::sim
