#include "fast/topology/spectral.hpp"

#include <algorithm>
#include <functional>
#include <vector>

#include <Eigen/Dense>

#include "fast/core/error.hpp"

namespace fast::topology {

double second_eigenvalue_modulus(const MixingMatrix& w) {
  const int n = w.size();
  if (n == 1) return 0.0;
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(
      w.values().data(), n, n);
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

}  // namespace fast::topology
