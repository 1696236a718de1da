#pragma once
// Graph: the communication graph of a decentralized strategy (D-PSGD, AD-PSGD, push-sum gossip,
// A2CiD2). Nodes are the ranks 0..n-1; an edge u -> v means "u sends to v" (v is an out-neighbor
// of u, u an in-neighbor of v). An undirected graph stores both directions of every edge.
//
// Contract:
//   - n >= 1, fixed at construction.
//   - No self-loops are stored: add_edge(u, u) throws. Mixing weights add the self weight.
//   - Edges are a set: adding an existing edge is a no-op (returns false).
//   - Neighbor lists are sorted ascending, so iteration order is deterministic on every worker.
//   - Bad node ids throw InvalidArgument naming the id and n.
// Thread-safety: const methods may be called concurrently; mutation needs external exclusion.

#include <cstddef>
#include <utility>
#include <vector>

namespace fast::topology {

class Graph {
 public:
  // A graph with n nodes and no edges; n >= 1.
  explicit Graph(int n);

  // Number of nodes.
  int size() const noexcept { return static_cast<int>(out_.size()); }
  // Number of directed edges (an undirected edge counts twice).
  std::size_t num_edges() const noexcept { return num_edges_; }

  // Adds the directed edge u -> v; returns false if it was already there. u != v.
  bool add_edge(int u, int v);
  // Adds u -> v and v -> u; returns false if both were already there. u != v.
  bool add_undirected(int u, int v);
  bool has_edge(int u, int v) const;

  // Nodes u sends to, ascending.
  const std::vector<int>& neighbors_out(int u) const;
  // Nodes sending to u, ascending.
  const std::vector<int>& neighbors_in(int u) const;
  // Out-degree of u (the degree, for a symmetric graph).
  int degree(int u) const;
  int in_degree(int u) const;

  // True when every edge u -> v has its reverse v -> u.
  bool is_symmetric() const;
  // True when every node reaches every other node along directed edges (strongly connected;
  // for a symmetric graph this is ordinary connectivity). A single node is connected.
  bool is_connected() const;

  // All directed edges (u, v), sorted by u then v.
  std::vector<std::pair<int, int>> edges() const;

 private:
  void check_node(int u, const char* what) const;

  std::vector<std::vector<int>> out_;
  std::vector<std::vector<int>> in_;
  std::size_t num_edges_ = 0;
};

}  // namespace fast::topology
