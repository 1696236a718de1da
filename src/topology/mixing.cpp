#include "fast/topology/mixing.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "fast/core/error.hpp"

namespace fast::topology {

namespace {

// The first violation of stochasticity, or nothing. `rows` checks row sums, `cols` column sums.
std::optional<std::string> find_violation(const MixingMatrix& w, double tol, bool rows, bool cols) {
  const int n = w.size();
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (w.w(i, j) < -tol) {
        return fmt::format("entry ({}, {}) is {}, expected >= 0 within {}", i, j, w.w(i, j), tol);
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    double row_sum = 0.0;
    double col_sum = 0.0;
    for (int j = 0; j < n; ++j) {
      row_sum += w.w(i, j);
      col_sum += w.w(j, i);
    }
    if (rows && !(std::abs(row_sum - 1.0) <= tol)) {
      return fmt::format("row {} sums to {}, expected 1 within {}", i, row_sum, tol);
    }
    if (cols && !(std::abs(col_sum - 1.0) <= tol)) {
      return fmt::format("column {} sums to {}, expected 1 within {}", i, col_sum, tol);
    }
  }
  return std::nullopt;
}

// First node not reached from 0 along `neighbors` (out or in lists), or -1.
template <typename Neighbors>
int first_unreached(const Graph& g, Neighbors neighbors) {
  std::vector<char> seen(static_cast<std::size_t>(g.size()), 0);
  std::vector<int> stack{0};
  seen[0] = 1;
  while (!stack.empty()) {
    const int u = stack.back();
    stack.pop_back();
    for (int v : neighbors(u)) {
      if (!seen[static_cast<std::size_t>(v)]) {
        seen[static_cast<std::size_t>(v)] = 1;
        stack.push_back(v);
      }
    }
  }
  const auto it = std::find(seen.begin(), seen.end(), 0);
  return it == seen.end() ? -1 : static_cast<int>(it - seen.begin());
}

}  // namespace

MixingMatrix::MixingMatrix(int n) : n_(n) {
  FAST_ENFORCE(n >= 1, "MixingMatrix: n must be >= 1, got {}", n);
  values_.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), 0.0);
}

MixingMatrix::MixingMatrix(int n, std::vector<double> values) : n_(n), values_(std::move(values)) {
  FAST_ENFORCE(n >= 1, "MixingMatrix: n must be >= 1, got {}", n);
  FAST_ENFORCE_EQ(values_.size(), static_cast<std::size_t>(n) * static_cast<std::size_t>(n),
                  "MixingMatrix: values of a {}x{} matrix", n, n);
}

std::size_t MixingMatrix::index(int i, int j) const {
  FAST_ENFORCE(i >= 0 && i < n_ && j >= 0 && j < n_, "MixingMatrix: index ({}, {}) out of range for n = {}", i, j, n_);
  return static_cast<std::size_t>(i) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(j);
}

std::span<const double> MixingMatrix::row(int i) const {
  return std::span<const double>(values_).subspan(index(i, 0), static_cast<std::size_t>(n_));
}

std::span<double> MixingMatrix::row(int i) {
  return std::span<double>(values_).subspan(index(i, 0), static_cast<std::size_t>(n_));
}

MixingMatrix MixingMatrix::transposed() const {
  MixingMatrix t(n_);
  for (int i = 0; i < n_; ++i) {
    for (int j = 0; j < n_; ++j) t.w(j, i) = w(i, j);
  }
  return t;
}

MixingMatrix metropolis_hastings(const Graph& graph) {
  FAST_ENFORCE(graph.is_symmetric(),
               "metropolis_hastings: graph must be symmetric (undirected); use uniform_neighbor_weights "
               "for directed graphs");
  const int n = graph.size();
  MixingMatrix w(n);
  for (int i = 0; i < n; ++i) {
    const std::vector<int>& out = graph.neighbors_out(i);
    const MixingRow row = metropolis_hastings_row(graph, i, out);
    for (std::size_t k = 0; k < out.size(); ++k) w.w(i, out[k]) = row.neighbors[k];
    w.w(i, i) = row.self;
  }
  return w;
}

MixingRow metropolis_hastings_row(const Graph& graph, int i, std::span<const int> neighbors) {
  MixingRow row;
  double off = 0.0;
  for (int j : neighbors) {
    const double wij = 1.0 / (1.0 + std::max(graph.degree(i), graph.degree(j)));
    row.neighbors.push_back(wij);
    off += wij;
  }
  row.self = 1.0 - off;
  return row;
}

MixingMatrix uniform_neighbor_weights(const Graph& graph) {
  const int n = graph.size();
  MixingMatrix w(n);
  for (int i = 0; i < n; ++i) {
    const double wij = 1.0 / (graph.degree(i) + 1);
    w.w(i, i) = wij;
    for (int j : graph.neighbors_out(i)) w.w(i, j) = wij;
  }
  return w;
}

bool is_row_stochastic(const MixingMatrix& w, double tol) { return !find_violation(w, tol, true, false); }

bool is_column_stochastic(const MixingMatrix& w, double tol) { return !find_violation(w, tol, false, true); }

bool is_doubly_stochastic(const MixingMatrix& w, double tol) { return !find_violation(w, tol, true, true); }

bool is_symmetric(const MixingMatrix& w, double tol) {
  for (int i = 0; i < w.size(); ++i) {
    for (int j = i + 1; j < w.size(); ++j) {
      if (!(std::abs(w.w(i, j) - w.w(j, i)) <= tol)) return false;
    }
  }
  return true;
}

void check_doubly_stochastic(const MixingMatrix& w, double tol) {
  if (const auto violation = find_violation(w, tol, true, true)) {
    FAST_THROW(InvalidArgument, "mixing matrix ({}x{}) is not doubly stochastic: {}", w.size(), w.size(), *violation);
  }
}

void check_connected(const Graph& graph) {
  const int forward = first_unreached(graph, [&](int u) -> const std::vector<int>& { return graph.neighbors_out(u); });
  if (forward >= 0) {
    FAST_THROW(InvalidArgument, "graph ({} nodes) is not connected: node {} is not reachable from node 0", graph.size(),
               forward);
  }
  const int backward = first_unreached(graph, [&](int u) -> const std::vector<int>& { return graph.neighbors_in(u); });
  if (backward >= 0) {
    FAST_THROW(InvalidArgument, "graph ({} nodes) is not strongly connected: node 0 is not reachable from node {}",
               graph.size(), backward);
  }
}

}  // namespace fast::topology
