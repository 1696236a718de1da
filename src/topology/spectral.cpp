#include "fast/topology/spectral.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include <Eigen/Dense>

#include "fast/core/error.hpp"

namespace fast::topology {

double second_eigenvalue_modulus(const MixingMatrix& w) {
  const int n = w.size();
  if (n == 1) return 0.0;
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(w.values().data(), n,
                                                                                                   n);
  std::vector<double> moduli(static_cast<std::size_t>(n));
  if (is_symmetric(w, 1e-12)) {
    const Eigen::MatrixXd sym = (m + m.transpose()) * 0.5;  // exact symmetry for the solver
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(sym, Eigen::EigenvaluesOnly);
    FAST_ENFORCE_AS(core::Error, solver.info() == Eigen::Success,
                    "second_eigenvalue_modulus: symmetric eigensolver failed for n = {}", n);
    for (int k = 0; k < n; ++k) moduli[static_cast<std::size_t>(k)] = std::abs(solver.eigenvalues()(k));
  } else {
    Eigen::EigenSolver<Eigen::MatrixXd> solver(Eigen::MatrixXd(m), /*computeEigenvectors=*/false);
    FAST_ENFORCE_AS(core::Error, solver.info() == Eigen::Success,
                    "second_eigenvalue_modulus: general eigensolver failed for n = {}", n);
    for (int k = 0; k < n; ++k) moduli[static_cast<std::size_t>(k)] = std::abs(solver.eigenvalues()(k));
  }
  std::nth_element(moduli.begin(), moduli.begin() + 1, moduli.end(), std::greater<>());
  return moduli[1];
}

double spectral_gap(const MixingMatrix& w) { return 1.0 - second_eigenvalue_modulus(w); }

GossipLaplacianSpectrum gossip_laplacian_spectrum(const Graph& graph, double rate) {
  const int n = graph.size();
  FAST_ENFORCE(n >= 2, "gossip Laplacian: needs at least 2 nodes, got {}", n);
  FAST_ENFORCE(std::isfinite(rate) && rate > 0, "gossip Laplacian: rate must be > 0, got {}", rate);
  FAST_ENFORCE(graph.is_symmetric(), "gossip Laplacian: the graph must be undirected");
  check_connected(graph);
  Eigen::MatrixXd lap = Eigen::MatrixXd::Zero(n, n);
  for (const auto& [i, j] : graph.edges()) {
    if (i > j) continue;
    const double r = rate / 2 * (1.0 / graph.degree(i) + 1.0 / graph.degree(j));
    lap(i, i) += r;
    lap(j, j) += r;
    lap(i, j) -= r;
    lap(j, i) -= r;
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(lap);
  FAST_ENFORCE_AS(core::Error, solver.info() == Eigen::Success, "gossip Laplacian: eigensolver failed for n = {}", n);
  // Connected: eigenvalue 0 once (eigenvector 1), the others positive, ascending.
  const Eigen::VectorXd& mu = solver.eigenvalues();
  const Eigen::MatrixXd& v = solver.eigenvectors();
  GossipLaplacianSpectrum s;
  s.algebraic_connectivity = mu(1);
  for (const auto& [i, j] : graph.edges()) {
    if (i > j) continue;
    // (e_i - e_j)^T Lambda^+ (e_i - e_j) = sum_{k >= 1} (v_k(i) - v_k(j))^2 / mu_k
    double r = 0;
    for (int k = 1; k < n; ++k) r += (v(i, k) - v(j, k)) * (v(i, k) - v(j, k)) / mu(k);
    s.max_edge_resistance = std::max(s.max_edge_resistance, r);
  }
  return s;
}

}  // namespace fast::topology
