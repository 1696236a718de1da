#include "fast/topology/graph.hpp"

#include <algorithm>

#include "fast/core/error.hpp"

namespace fast::topology {

namespace {

// Inserts v into the sorted vector list; returns false if already present.
bool insert_sorted(std::vector<int>& list, int v) {
  const auto it = std::lower_bound(list.begin(), list.end(), v);
  if (it != list.end() && *it == v) return false;
  list.insert(it, v);
  return true;
}

// Number of nodes reachable from node 0 following `adjacency`.
int reachable_from_zero(const std::vector<std::vector<int>>& adjacency) {
  std::vector<char> seen(adjacency.size(), 0);
  std::vector<int> stack{0};
  seen[0] = 1;
  int count = 1;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (int v : adjacency[static_cast<std::size_t>(u)]) {
      if (!seen[static_cast<std::size_t>(v)]) {
        seen[static_cast<std::size_t>(v)] = 1;
        ++count;
        stack.push_back(v);
      }
    }
  }
  return count;
}

}  // namespace

Graph::Graph(int n) {
  FAST_ENFORCE(n >= 1, "Graph: number of nodes must be >= 1, got {}", n);
  out_.resize(static_cast<std::size_t>(n));
  in_.resize(static_cast<std::size_t>(n));
}

void Graph::check_node(int u, const char* what) const {
  FAST_ENFORCE(u >= 0 && u < size(), "Graph: {} node id {} out of range [0, {}) (n = {})", what, u, size(), size());
}

bool Graph::add_edge(int u, int v) {
  check_node(u, "source");
  check_node(v, "target");
  FAST_ENFORCE(u != v, "Graph: self-loop {} -> {} not allowed (mixing weights add the self weight)", u, v);
  if (!insert_sorted(out_[static_cast<std::size_t>(u)], v)) return false;
  insert_sorted(in_[static_cast<std::size_t>(v)], u);
  ++num_edges_;
  return true;
}

bool Graph::add_undirected(int u, int v) {
  // Validate both ends before mutating, so a failure leaves the graph unchanged.
  check_node(u, "source");
  check_node(v, "target");
  const bool a = add_edge(u, v);
  const bool b = add_edge(v, u);
  return a || b;
}

bool Graph::has_edge(int u, int v) const {
  check_node(u, "source");
  check_node(v, "target");
  const auto& list = out_[static_cast<std::size_t>(u)];
  return std::binary_search(list.begin(), list.end(), v);
}

const std::vector<int>& Graph::neighbors_out(int u) const {
  check_node(u, "queried");
  return out_[static_cast<std::size_t>(u)];
}

const std::vector<int>& Graph::neighbors_in(int u) const {
  check_node(u, "queried");
  return in_[static_cast<std::size_t>(u)];
}

int Graph::degree(int u) const { return static_cast<int>(neighbors_out(u).size()); }

int Graph::in_degree(int u) const { return static_cast<int>(neighbors_in(u).size()); }

bool Graph::is_symmetric() const {
  // Symmetric iff every node's out-list equals its in-list.
  for (std::size_t u = 0; u < out_.size(); ++u) {
    if (out_[u] != in_[u]) return false;
  }
  return true;
}

bool Graph::is_connected() const {
  // Strongly connected iff node 0 reaches everyone forward and backward.
  return reachable_from_zero(out_) == size() && reachable_from_zero(in_) == size();
}

std::vector<std::pair<int, int>> Graph::edges() const {
  std::vector<std::pair<int, int>> result;
  result.reserve(num_edges_);
  for (std::size_t u = 0; u < out_.size(); ++u) {
    for (int v : out_[u]) result.emplace_back(static_cast<int>(u), v);
  }
  return result;
}

}  // namespace fast::topology
