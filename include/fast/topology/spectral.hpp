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

#include "fast/topology/mixing.hpp"

namespace fast::topology {

double second_eigenvalue_modulus(const MixingMatrix& w);
double spectral_gap(const MixingMatrix& w);

}  // namespace fast::topology
