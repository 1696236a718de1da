#include "fast/topology/schedule.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>

#include "fast/core/error.hpp"
#include "fast/core/random.hpp"
#include "fast/core/spec.hpp"
#include "fast/core/suggest.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/mixing.hpp"

namespace fast::topology {

namespace {

// Builds the graph of round `round` of an aperiodic kind; a pure function of its arguments.
using RoundBuilder = Graph (*)(int n, std::uint64_t seed, std::int64_t round);

// Per-kind salts, so that two kinds given the same seed draw unrelated streams.
constexpr std::uint64_t kMatchingSalt = 0x6D61746368696E67ULL;  // "matching"
constexpr std::uint64_t kPeerSalt = 0x706565722D6F6E65ULL;      // "peer-one"

using core::SplitMix64;

// The generator of one round: depends on (seed, salt, round) only; distinct rounds give distinct
// states (core::derive_seed).
SplitMix64 round_generator(std::uint64_t seed, std::uint64_t salt, std::int64_t round) {
  return SplitMix64(core::derive_seed(seed, salt, static_cast<std::uint64_t>(round)));
}

// A uniformly random permutation (Fisher-Yates with the unbiased bounded draw), paired off in
// order: (p0, p1), (p2, p3), ...; with odd n the last node of the permutation idles.
Graph random_matching_round(int n, std::uint64_t seed, std::int64_t round) {
  SplitMix64 rng = round_generator(seed, kMatchingSalt, round);
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  Graph g(n);
  for (std::size_t k = 0; k + 1 < order.size(); k += 2) g.add_undirected(order[k], order[k + 1]);
  return g;
}

// Node i, in order 0..n-1, sends to a uniform draw among the n - 1 other nodes.
Graph random_peer_round(int n, std::uint64_t seed, std::int64_t round) {
  SplitMix64 rng = round_generator(seed, kPeerSalt, round);
  Graph g(n);
  for (int i = 0; i < n && n > 1; ++i) {
    int j = static_cast<int>(rng.below(static_cast<std::uint64_t>(n - 1)));
    if (j >= i) ++j;
    g.add_edge(i, j);
  }
  return g;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& name : names) s += (s.empty() ? "" : ", ") + name;
  return s;
}

bool is_topology_name(const std::string& name) {
  const auto& names = topology_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// make_topology(item, n, seed) with its errors prefixed by the schedule's spec.
Graph static_graph(const std::string& spec, const std::string& item, int n, std::uint64_t seed) {
  try {
    return make_topology(item, n, seed);
  } catch (const IoError& e) {
    FAST_THROW(IoError, "schedule '{}': {}", spec, e.what());
  } catch (const InvalidArgument& e) {
    FAST_THROW(InvalidArgument, "schedule '{}': {}", spec, e.what());
  }
}

}  // namespace

struct TopologySchedule::State {
  std::string spec;
  int n = 0;
  bool symmetric = true;
  // Periodic kinds: the graphs of rounds 0..period-1 (non-empty). Aperiodic kinds: empty.
  std::vector<std::shared_ptr<const Graph>> periodic;
  // Aperiodic kinds: how to build a round, and its seed.
  RoundBuilder builder = nullptr;
  std::uint64_t seed = 0;

  struct Slot {
    std::int64_t round = -1;
    std::shared_ptr<const Graph> graph;
  };
  std::mutex mutex;  // guards cache; never held while a graph is built
  std::array<Slot, kCacheSlots> cache;
};

TopologySchedule::TopologySchedule(std::shared_ptr<State> state) : state_(std::move(state)) {}

TopologySchedule::TopologySchedule(std::string spec, std::vector<Graph> graphs) {
  FAST_ENFORCE(!graphs.empty(), "schedule '{}': needs at least one graph", spec);
  auto state = std::make_shared<State>();
  state->n = graphs.front().size();
  for (std::size_t r = 0; r < graphs.size(); ++r) {
    FAST_ENFORCE(graphs[r].size() == state->n, "schedule '{}': graph {} has {} nodes, graph 0 has {}", spec, r,
                 graphs[r].size(), state->n);
    state->symmetric = state->symmetric && graphs[r].is_symmetric();
    state->periodic.push_back(std::make_shared<const Graph>(std::move(graphs[r])));
  }
  state->spec = std::move(spec);
  state_ = std::move(state);
}

std::shared_ptr<const Graph> TopologySchedule::graph_at(std::int64_t round) const {
  State& s = *state_;
  FAST_ENFORCE(round >= 0, "schedule '{}': round must be >= 0, got {}", s.spec, round);
  if (!s.periodic.empty()) {
    return s.periodic[static_cast<std::size_t>(round % static_cast<std::int64_t>(s.periodic.size()))];
  }
  State::Slot& slot = s.cache[static_cast<std::size_t>(round % kCacheSlots)];
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (slot.round == round) return slot.graph;
  }
  // Two threads may build the same round at once; both get equal graphs (pure function).
  auto graph = std::make_shared<const Graph>(s.builder(s.n, s.seed, round));
  std::lock_guard<std::mutex> lock(s.mutex);
  slot.round = round;
  slot.graph = graph;
  return graph;
}

std::vector<int> TopologySchedule::out_neighbors(int node, std::int64_t round) const {
  return graph_at(round)->neighbors_out(node);
}

std::vector<int> TopologySchedule::in_neighbors(int node, std::int64_t round) const {
  return graph_at(round)->neighbors_in(node);
}

int TopologySchedule::size() const noexcept { return state_->n; }

std::int64_t TopologySchedule::period() const noexcept { return static_cast<std::int64_t>(state_->periodic.size()); }

bool TopologySchedule::time_varying() const noexcept { return period() != 1; }

bool TopologySchedule::symmetric() const noexcept { return state_->symmetric; }

const std::string& TopologySchedule::spec() const noexcept { return state_->spec; }

const core::SpecFamily& schedule_family() {
  static const core::SpecFamily family(
      "schedule", core::SpecSyntax::positional,
      {{"exponential-peer", "round r: node i sends to i + 2^(r mod ceil(log2 n)) (period ceil(log2 n))"},
       {"random-matching", "each round a uniformly random perfect matching (odd n: one node idles)"},
       {"random-peer", "each round every node sends to one uniformly drawn other node"},
       {"cycle",
        "the static topologies ITEMS (joined by ';') in turn, item k seeded with seed + k",
        {core::Setting::string("items", "", "topology specs joined by ';'.")},
        1}});
  return family;
}

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = schedule_family().names();
  return names;
}

namespace {

std::vector<Graph> cycle_graphs(const std::string& spec, const std::string& params, int n, std::uint64_t seed) {
  std::vector<Graph> graphs;
  std::size_t begin = 0;
  while (begin <= params.size()) {
    const std::size_t end = std::min(params.find(';', begin), params.size());
    const std::string item = params.substr(begin, end - begin);
    const std::size_t index = graphs.size();
    FAST_ENFORCE(!item.empty(), "schedule '{}': cycle item {} is empty", spec, index);
    const std::string item_name(core::spec_name(item));
    FAST_ENFORCE(is_topology_name(item_name),
                 "schedule '{}': cycle item {} '{}' is not a static topology, expected one of: {}", spec, index, item,
                 join(topology_names()));
    graphs.push_back(static_graph(spec, item, n, seed + index));
    begin = end + 1;
  }
  return graphs;
}

}  // namespace

namespace {
// The schedules make_schedule built, by (spec, n, seed), while one of their copies lives: every
// worker of a process asks for the same schedule, and a graph of n nodes built per worker would
// make a process of n workers (a simulated world) hold O(n^2) adjacency. A state is immutable
// but for its thread-safe cache, so sharing it changes no answer.
using ScheduleKey = std::tuple<std::string, int, std::uint64_t>;
std::mutex schedules_mutex;  // guards make_schedule's `built`
}  // namespace

TopologySchedule make_schedule(const std::string& spec, int n, std::uint64_t seed) {
  using Built = std::map<ScheduleKey, std::weak_ptr<TopologySchedule::State>>;
  static auto* built = new Built;  // NOLINT: never destroyed (schedules may outlive static destruction)
  ScheduleKey key{spec, n, seed};
  {
    std::lock_guard<std::mutex> lock(schedules_mutex);
    const auto it = built->find(key);
    if (it != built->end())
      if (std::shared_ptr<TopologySchedule::State> state = it->second.lock()) return TopologySchedule(std::move(state));
  }
  TopologySchedule schedule = build_schedule(spec, n, seed);  // outside the lock: O(n) work or more
  std::lock_guard<std::mutex> lock(schedules_mutex);
  std::erase_if(*built, [](const auto& entry) { return entry.second.expired(); });
  built->insert_or_assign(std::move(key), schedule.state_);
  return schedule;
}

TopologySchedule build_schedule(const std::string& spec, int n, std::uint64_t seed) {
  const std::string name(core::spec_name(spec));
  FAST_ENFORCE(n >= 1, "schedule '{}': n must be >= 1, got {}", spec, n);
  if (is_topology_name(name)) return TopologySchedule(spec, {static_graph(spec, spec, n, seed)});
  if (schedule_family().find(name) == nullptr) {
    std::vector<std::string> kinds = topology_names();
    kinds.insert(kinds.end(), schedule_names().begin(), schedule_names().end());
    FAST_THROW(InvalidArgument, "schedule '{}': unknown kind '{}'{}, expected a topology ({}) or a schedule ({})", spec,
               name, core::did_you_mean(name, kinds), join(topology_names()), join(schedule_names()));
  }
  const core::ParsedSpec p = schedule_family().parse(spec);
  if (name == "exponential-peer") {
    std::vector<Graph> graphs{exponential_peer(n, 0)};
    while ((std::int64_t{1} << graphs.size()) < n) {
      graphs.push_back(exponential_peer(n, static_cast<std::int64_t>(graphs.size())));
    }
    return TopologySchedule(spec, std::move(graphs));
  }
  if (name == "cycle") return TopologySchedule(spec, cycle_graphs(spec, p.string("items"), n, seed));
  auto state = std::make_shared<TopologySchedule::State>();
  state->spec = spec;
  state->n = n;
  state->seed = seed;
  const bool matching = name == "random-matching";
  state->builder = matching ? &random_matching_round : &random_peer_round;
  state->symmetric = matching || n <= 2;  // with n <= 2 the only peer sends back
  return TopologySchedule(std::move(state));
}

Graph union_of_rounds(const TopologySchedule& schedule, std::int64_t begin, std::int64_t end) {
  FAST_ENFORCE(begin >= 0 && begin < end, "schedule '{}': expected rounds 0 <= begin < end, got [{}, {})",
               schedule.spec(), begin, end);
  // A periodic schedule repeats after period() rounds: later rounds add no edge.
  if (schedule.period() > 0) end = std::min(end, begin + schedule.period());
  Graph all(schedule.size());
  for (std::int64_t r = begin; r < end; ++r) {
    const auto graph = schedule.graph_at(r);
    for (int u = 0; u < graph->size(); ++u) {
      for (int v : graph->neighbors_out(u)) all.add_edge(u, v);
    }
  }
  return all;
}

void check_connected_over(const TopologySchedule& schedule, std::int64_t window) {
  FAST_ENFORCE(window >= 1, "schedule '{}': connectivity window must be >= 1, got {}", schedule.spec(), window);
  const Graph all = union_of_rounds(schedule, 0, window);
  try {
    check_connected(all);
  } catch (const InvalidArgument& e) {
    FAST_THROW(InvalidArgument, "schedule '{}' (n = {}): the union of rounds [0, {}) is not strongly connected: {}",
               schedule.spec(), schedule.size(), window, e.what());
  }
}

}  // namespace fast::topology
