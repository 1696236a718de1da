#include "fast/topology/spectral.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "fast/core/error.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/mixing.hpp"

namespace fast::topology {
namespace {

TEST(Spectral, RingWithMetropolisWeightsMatchesClosedForm) {
  // Every degree 2 -> W = circulant(1/3 on self and both neighbors), eigenvalues
  // 1/3 + 2/3 cos(2 pi k / n), k = 0..n-1; |lambda_2| = max over k != 0 of their modulus.
  for (int n = 3; n <= 16; ++n) {
    double expected_modulus = 0.0;
    for (int k = 1; k < n; ++k) {
      const double lambda = 1.0 / 3 + 2.0 / 3 * std::cos(2 * std::numbers::pi * k / n);
      expected_modulus = std::max(expected_modulus, std::abs(lambda));
    }
    const MixingMatrix w = metropolis_hastings(ring(n));
    EXPECT_NEAR(second_eigenvalue_modulus(w), expected_modulus, 1e-12) << "n = " << n;
    EXPECT_NEAR(spectral_gap(w), 1.0 - expected_modulus, 1e-12) << "n = " << n;
  }
}

// Gossip Laplacian with node rate r. Complete graph K_n: every edge fires at r / (n - 1), so
// Lambda = r / (n - 1) (n I - 1 1^T): mu_2 = n r / (n - 1), and the effective resistance of an edge
// of K_n with conductance c is 2 / (n c) = 2 (n - 1) / (n r). Ring C_n: every edge fires at r / 2,
// mu_2 = (r / 2)(2 - 2 cos(2 pi / n)), and an edge's resistance is (n - 1) / (n c) = 2 (n - 1) / (n r).
TEST(Spectral, GossipLaplacianOfCompleteGraphsAndRingsMatchesClosedForms) {
  for (int n : {2, 3, 5, 8}) {
    for (double r : {0.5, 1.0, 2.0}) {
      const GossipLaplacianSpectrum k = gossip_laplacian_spectrum(complete(n), r);
      EXPECT_NEAR(k.algebraic_connectivity, n * r / (n - 1), 1e-9) << "K_" << n << " r=" << r;
      EXPECT_NEAR(k.max_edge_resistance, 2.0 * (n - 1) / (n * r), 1e-9) << "K_" << n << " r=" << r;
      if (n < 3) continue;
      const GossipLaplacianSpectrum c = gossip_laplacian_spectrum(ring(n), r);
      EXPECT_NEAR(c.algebraic_connectivity, r / 2 * (2 - 2 * std::cos(2 * std::numbers::pi / n)), 1e-9) << "C_" << n;
      EXPECT_NEAR(c.max_edge_resistance, 2.0 * (n - 1) / (n * r), 1e-9) << "C_" << n << " r=" << r;
    }
  }
  EXPECT_THROW(gossip_laplacian_spectrum(complete(1), 1.0), core::InvalidArgument);
  EXPECT_THROW(gossip_laplacian_spectrum(ring(4), 0.0), core::InvalidArgument);
  EXPECT_THROW(gossip_laplacian_spectrum(exponential(5), 1.0), core::InvalidArgument);  // directed
  Graph split(4);
  split.add_undirected(0, 1);
  split.add_undirected(2, 3);
  EXPECT_THROW(gossip_laplacian_spectrum(split, 1.0), core::InvalidArgument);
}

TEST(Spectral, CompleteGraphWithMetropolisWeightsHasGapOne) {
  for (int n : {2, 5, 9}) {
    const MixingMatrix w = metropolis_hastings(complete(n));  // 1/n everywhere
    EXPECT_NEAR(w.w(0, 1), 1.0 / n, 1e-15);
    EXPECT_NEAR(spectral_gap(w), 1.0, 1e-12) << "n = " << n;
  }
}

TEST(Spectral, DisconnectedGraphHasGapZero) {
  Graph two(6);  // two triangles
  for (int base : {0, 3}) {
    for (int i = 0; i < 3; ++i) two.add_undirected(base + i, base + (i + 1) % 3);
  }
  EXPECT_NEAR(spectral_gap(metropolis_hastings(two)), 0.0, 1e-12);
}

TEST(Spectral, NonSymmetricExponentialMatchesCirculantClosedForm) {
  // exponential(8) with uniform weights is circulant with first row 1/4 at offsets 0, 1, 2, 4:
  // eigenvalues (1 + w^k + w^{2k} + w^{4k}) / 4, w = exp(2 pi i / 8).
  const int n = 8;
  double expected = 0.0;
  for (int k = 1; k < n; ++k) {
    double re = 0.0, im = 0.0;
    for (int off : {0, 1, 2, 4}) {
      re += std::cos(2 * std::numbers::pi * k * off / n) / 4;
      im += std::sin(2 * std::numbers::pi * k * off / n) / 4;
    }
    expected = std::max(expected, std::hypot(re, im));
  }
  EXPECT_NEAR(second_eigenvalue_modulus(uniform_neighbor_weights(exponential(n))), expected, 1e-10);
}

TEST(Spectral, SingleNodeHasGapOne) { EXPECT_EQ(spectral_gap(MixingMatrix(1, {1.0})), 1.0); }

}  // namespace
}  // namespace fast::topology
