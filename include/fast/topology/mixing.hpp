#pragma once
// Mixing (gossip) matrices over a Graph and the checks decentralized strategies rely on.
//
// Convention: a gossip step computes x_i <- sum_j W(i, j) x_j, so row i holds the weights node i
// gives to itself and to the nodes it averages with. W(i, j) != 0 only for j == i or an edge
// i -> j. For push-sum (column-stochastic: node j splits its mass over its out-neighbors) use
// transposed(), whose column j is row j of W.
//
// Checks return or enforce, with an absolute tolerance `tol`, that all entries are >= -tol and
// the named sums are 1 within tol. check_* throw InvalidArgument naming the first failing
// row/column/entry with its value, e.g. "row 3 sums to 0.9, expected 1 within 1e-12".

#include <cstddef>
#include <span>
#include <vector>

#include "fast/topology/graph.hpp"

namespace fast::topology {

// Dense n x n matrix of doubles, row-major. Value type; not thread-safe for concurrent mutation.
class MixingMatrix {
 public:
  // n x n zeros; n >= 1.
  explicit MixingMatrix(int n);
  // n x n from row-major values; values.size() must be n * n.
  MixingMatrix(int n, std::vector<double> values);

  int size() const noexcept { return n_; }
  double w(int i, int j) const { return values_[index(i, j)]; }
  double& w(int i, int j) { return values_[index(i, j)]; }
  std::span<const double> row(int i) const;
  std::span<double> row(int i);
  // All n * n entries, row-major.
  const std::vector<double>& values() const noexcept { return values_; }
  MixingMatrix transposed() const;

 private:
  std::size_t index(int i, int j) const;

  int n_;
  std::vector<double> values_;
};

// Metropolis-Hastings weights of a symmetric graph: W(i, j) = 1 / (1 + max(d_i, d_j)) for every
// edge, W(i, i) = 1 - sum_{j != i} W(i, j). Symmetric and doubly stochastic. Throws
// InvalidArgument if the graph is not symmetric.
MixingMatrix metropolis_hastings(const Graph& graph);

// Row i of metropolis_hastings(graph) without the n x n matrix: the weights W(i, j) of `neighbors`
// (all of i's neighbours, in any order) in that order, and W(i, i). The graph's symmetry is not
// checked here (metropolis_hastings does). For a worker that needs only its own row: each of 1,024
// simulated dpsgd workers built the whole matrix (8 MB) and checked it.
struct MixingRow {
  std::vector<double> neighbors;
  double self = 1.0;
};
MixingRow metropolis_hastings_row(const Graph& graph, int i, std::span<const int> neighbors);

// Uniform weights over the closed out-neighborhood: W(i, j) = 1 / (d_i + 1) for j == i and every
// edge i -> j (d_i the out-degree). Row stochastic; doubly stochastic when the graph is regular
// (e.g. ring, torus, hypercube, exponential), not in general. Works for directed graphs.
MixingMatrix uniform_neighbor_weights(const Graph& graph);

bool is_row_stochastic(const MixingMatrix& w, double tol = 1e-12);
bool is_column_stochastic(const MixingMatrix& w, double tol = 1e-12);
bool is_doubly_stochastic(const MixingMatrix& w, double tol = 1e-12);
// |W(i, j) - W(j, i)| <= tol for all i, j.
bool is_symmetric(const MixingMatrix& w, double tol = 1e-12);

// Throws InvalidArgument naming the first negative entry, row or column whose sum is off.
void check_doubly_stochastic(const MixingMatrix& w, double tol = 1e-12);
// Throws InvalidArgument naming a node that cannot be reached (from node 0, or that cannot reach
// node 0 for directed graphs) when the graph is not (strongly) connected.
void check_connected(const Graph& graph);

}  // namespace fast::topology
