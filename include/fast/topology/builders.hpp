#pragma once
// Builders of the standard communication graphs, and make_topology(), which picks one by a spec
// string. Every builder validates its parameters and throws InvalidArgument naming the bad value
// (IoError when an edge-list file cannot be read). All graphs are undirected (symmetric) except
// exponential() and exponential_peer(). Node ids are ranks 0..n-1.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fast/topology/graph.hpp"

namespace fast::core {
class SpecFamily;  // fast/core/spec.hpp
}  // namespace fast::core

namespace fast::topology {

// Cycle i <-> i+1 mod n. n >= 1; degree 2 for n >= 3 (1 for n = 2, 0 for n = 1).
Graph ring(int n);

// rows x cols grid with wrap-around; node (r, c) = r * cols + c is linked to (r, c+1 mod cols) and
// (r+1 mod rows, c). rows, cols >= 1. Degree 4 when rows, cols >= 3; a dimension of length 2
// contributes one neighbor (no duplicate edge), of length 1 none.
Graph torus2d(int rows, int cols);

// Every node linked to `center` (0 <= center < n). n >= 1.
Graph star(int n, int center = 0);

// Every pair linked; degree n - 1. n >= 1.
Graph complete(int n);

// Binary tree in heap layout: node i > 0 linked to its parent (i - 1) / 2. n >= 1.
Graph binary_tree(int n);

// Hypercube: i <-> i xor 2^k for every bit k; n must be a power of two; degree log2 n.
Graph hypercube(int n);

// Static exponential graph of SGP (Assran et al., "Stochastic Gradient Push for Distributed Deep
// Learning", ICML 2019): directed edges i -> (i + 2^k) mod n for every k >= 0 with 2^k < n.
// Out- and in-degree ceil(log2 n). Directed: i sends to i + 2^k and receives from i - 2^k
// (symmetric only for n <= 2). n >= 1.
Graph exponential(int n);

// One-peer exponential graph of round `round` (time-varying variant of SGP): every node i sends
// to the single peer (i + 2^(round mod m)) mod n, where m = ceil(log2 n) is the number of
// exponents of exponential(n); over m consecutive rounds the union is exponential(n).
// n >= 1 (n = 1 has no edges); round >= 0.
Graph exponential_peer(int n, std::int64_t round);

// Random simple d-regular undirected graph (no self-loops, no multi-edges), built by random
// pairing of the n * d half-edges, restarted until simple. Deterministic for a given (n, d, seed)
// on every platform (core::SplitMix64(seed), no std distributions). Requires 0 <= d < n and n * d
// even. Not necessarily connected (check_connected() if it matters; d >= 3 almost always is).
Graph random_regular(int n, int d, std::uint64_t seed);

// Undirected graph read from a text file: one edge "u v" per line (whitespace separated,
// decimal node ids); '#' starts a comment to the end of the line; blank lines are ignored.
// Node count: n_hint when n_hint > 0 (every id must then be < n_hint), else max id + 1.
// Errors name the file and the 1-based line: malformed line, negative or out-of-range id,
// self-loop. A file that cannot be opened throws IoError; one with no edges and n_hint <= 0
// throws InvalidArgument.
Graph from_edge_list_file(const std::string& path, int n_hint = 0);

// Builds the graph named by `spec` = NAME[:PARAMS] for n nodes:
//   ring | torus2d[:R[xC]] | star[:CENTER] | complete | tree | hypercube | exponential |
//   random-regular:D | file:PATH
// torus2d without params takes the most square factorisation R x C = n (R <= C); with params
// R * C must equal n. random-regular uses `seed`. file uses n as n_hint.
// Unknown names throw InvalidArgument listing the allowed names.
Graph make_topology(const std::string& spec, int n, std::uint64_t seed = 0);
// make_topology, for a user that exchanges over undirected edges: InvalidArgument naming `user`
// and the spec when the graph is directed (`why_undirected` says what needs it undirected) or
// disconnected on n workers.
Graph make_undirected_connected(const std::string& spec, int n, std::uint64_t seed, std::string_view user,
                                std::string_view why_undirected);

// The declarations of make_topology's specs (core/spec.hpp: positional syntax), in documentation
// order: what make_topology reads, `fast config-doc` documents and the declarations' test probes.
const core::SpecFamily& topology_family();
// The NAMEs accepted by make_topology, in documentation order.
const std::vector<std::string>& topology_names();

}  // namespace fast::topology
