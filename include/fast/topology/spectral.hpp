#pragma once
// Spectral gap of a mixing matrix: how fast gossip averaging contracts disagreement.
//
// Definition: let lambda_1, ..., lambda_n be the eigenvalues of W (complex in general), counted
// with multiplicity and sorted by modulus, |lambda_1| >= |lambda_2| >= ... >= |lambda_n|. For a
// stochastic W, |lambda_1| = 1. second_eigenvalue_modulus(W) = |lambda_2| and
// spectral_gap(W) = 1 - |lambda_2|. A connected graph with positive self weights has gap > 0;
// a disconnected one has a repeated eigenvalue 1 and gap 0; W = (1/n) 1 1^T has gap 1. For n = 1,
// |lambda_2| is defined as 0 (gap 1).
// Symmetric W (within 1e-12) uses a self-adjoint eigensolver (real eigenvalues, accurate);
// otherwise a general eigensolver. Cost O(n^3): meant for setup and reporting, not per step.

#include "fast/topology/graph.hpp"
#include "fast/topology/mixing.hpp"

namespace fast::topology {

double second_eigenvalue_modulus(const MixingMatrix& w);
double spectral_gap(const MixingMatrix& w);

// The Laplacian of randomized pairwise gossip on an undirected connected graph: every node starts
// exchanges at rate rate / 2 (per unit of time), each with a neighbour drawn uniformly (so on a
// regular graph every node takes part in `rate` exchanges per unit of time), edge ij fires at
// lambda_ij = (rate / 2) (1 / d_i + 1 / d_j) and
//   Lambda = sum over edges of lambda_ij (e_i - e_j)(e_i - e_j)^T.
// Returns its smallest positive eigenvalue (the algebraic connectivity, mu_2) and the largest
// effective resistance of an edge, max_ij (e_i - e_j)^T Lambda^+ (e_i - e_j) (A2CiD2's chi_1 =
// 1 / mu_2 and chi_2 = that maximum / 2). InvalidArgument for n < 2, rate <= 0, a directed or a
// disconnected graph. O(n^3).
struct GossipLaplacianSpectrum {
  double algebraic_connectivity = 0;
  double max_edge_resistance = 0;
};
GossipLaplacianSpectrum gossip_laplacian_spectrum(const Graph& graph, double rate);

}  // namespace fast::topology
