#pragma once
// Time-varying topologies: the communication graph used at each round of a gossip strategy
// (push-sum / SGP, GoSGD, one-peer D-PSGD). Round r >= 0 is the strategy's r-th communication
// round; the schedule maps it to a Graph on the ranks 0..n-1 (edge u -> v: u sends to v).
//
// Determinism: every worker that builds a schedule from the same (spec, n, seed) gets the same
// graph for the same round, with no communication, on every platform (random kinds use the
// SplitMix64 generator of fast/core/random.hpp, as random_regular does, seeded with
// core::derive_seed(seed, salt of the kind, round); no std distributions).
//
// Kinds (make_schedule specs):
//   any make_topology spec   static: every round uses that graph; period 1.
//   exponential-peer         round r uses exponential_peer(n, r): node i sends to
//                            (i + 2^(r mod m)) mod n, m = ceil(log2 n); period max(m, 1).
//   random-matching          round r is a uniformly random matching of the nodes (a shuffled
//                            pairing; undirected; floor(n/2) pairs, with odd n one node idles).
//                            Aperiodic (period 0).
//   random-peer              round r: every node sends to one uniformly random other node
//                            (directed; in-degrees vary). Aperiodic (period 0).
//   cycle:S1;S2;...;Sk       round r uses the static spec S_(r mod k + 1); item j (0-based) is
//                            built with seed + j. Period k. Items may not contain ';'.
// Bad specs throw InvalidArgument (IoError for an unreadable edge-list file) whose message
// starts with "schedule '<spec>'"; an unknown kind lists topology_names() and schedule_names().

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fast/topology/graph.hpp"

namespace fast::core {
class SpecFamily;  // fast/core/spec.hpp
}  // namespace fast::core

namespace fast::topology {

// Value type; copies share one immutable description and one graph cache (cheap to copy).
// Thread-safety: every const method may be called concurrently, also on copies.
//
// Why graph_at returns a shared_ptr and the neighbour queries return copies: aperiodic kinds
// cannot keep every round's graph (memory would grow with the run), so their graphs are built on
// first use and kept in a small cache (kCacheSlots entries, direct-mapped by round, guarded by a
// mutex that is never held while a graph is built). A cache entry may be replaced at any time by
// another thread; the shared_ptr keeps the graph alive for as long as the caller holds it.
// Periodic kinds build all period() graphs at construction and never rebuild them.
class TopologySchedule {
 public:
  // Graphs kept by the cache of an aperiodic schedule (the newest graph per round mod this).
  static constexpr int kCacheSlots = 32;

  // Periodic schedule: round r uses graphs[r mod graphs.size()]. `graphs` non-empty, all of the
  // same size; `spec` is only a label (returned by spec(), used in error messages).
  TopologySchedule(std::string spec, std::vector<Graph> graphs);

  // The graph of round `round` (>= 0; InvalidArgument otherwise). Never null. The same round
  // always gives an equal graph (for periodic kinds, the same object).
  std::shared_ptr<const Graph> graph_at(std::int64_t round) const;
  // Out-neighbours (nodes `node` sends to) and in-neighbours (nodes sending to `node`) at
  // `round`, ascending. A bad node id throws InvalidArgument naming it and n.
  std::vector<int> out_neighbors(int node, std::int64_t round) const;
  std::vector<int> in_neighbors(int node, std::int64_t round) const;

  // Number of nodes n.
  int size() const noexcept;
  // Rounds after which the schedule repeats: graph_at(r) == graph_at(r + period()) for all r.
  // 1 for a static schedule; 0 for an aperiodic (random) one. Not necessarily the smallest such
  // number (e.g. a cycle listing one spec twice).
  std::int64_t period() const noexcept;
  // period() != 1.
  bool time_varying() const noexcept;
  // True when every round's graph is symmetric (undirected): Metropolis-Hastings weights apply.
  bool symmetric() const noexcept;
  // The spec it was built from, as given.
  const std::string& spec() const noexcept;

 private:
  struct State;  // defined in schedule.cpp
  explicit TopologySchedule(std::shared_ptr<State> state);
  friend TopologySchedule make_schedule(const std::string& spec, int n, std::uint64_t seed);
  friend TopologySchedule build_schedule(const std::string& spec, int n, std::uint64_t seed);

  std::shared_ptr<State> state_;
};

// Builds the schedule named by `spec` (grammar above) for n >= 1 nodes; random kinds and random
// static topologies use `seed`. While a schedule of the same (spec, n, seed) lives in the process,
// returns a copy of it (its graphs shared, not built again); thread-safe.
TopologySchedule make_schedule(const std::string& spec, int n, std::uint64_t seed = 0);
// The same, always built anew (make_schedule's builder).
TopologySchedule build_schedule(const std::string& spec, int n, std::uint64_t seed = 0);

// The time-varying kinds accepted by make_schedule besides topology_names(), in documentation
// order: exponential-peer, random-matching, random-peer, cycle.
const std::vector<std::string>& schedule_names();
// The declarations of those kinds (core/spec.hpp: positional syntax); make_schedule reads them,
// `fast config-doc` documents them.
const core::SpecFamily& schedule_family();

// The union (as a set of directed edges) of the graphs of rounds [begin, end); 0 <= begin < end.
Graph union_of_rounds(const TopologySchedule& schedule, std::int64_t begin, std::int64_t end);

// Throws InvalidArgument naming the spec, the window and an unreachable node unless the union of
// the graphs of rounds [0, window) is strongly connected (window >= 1). A one-peer schedule is
// never connected in one round; exponential-peer is over window ceil(log2 n).
void check_connected_over(const TopologySchedule& schedule, std::int64_t window);

}  // namespace fast::topology
