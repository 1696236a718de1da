#pragma once
// All-reduce algorithms and the rule that picks one (docs/collectives.md); the same model's rules
// for broadcast and all-gather.
//
//   ring                the pipelined ring: 2(n-1) messages of m/n bytes per worker. Bandwidth-
//                       optimal; its 2(n-1) latencies hurt small messages and slow links.
//   recursive-doubling  log2(p) exchanges of the whole vector (p: the largest power of two <= n).
//                       Fewest latencies; m bytes per exchange. For small messages.
//   halving-doubling    Rabenseifner: reduce-scatter by recursive halving, all-gather by recursive
//                       doubling: 2 log2(p) messages, the ring's bytes. For medium messages and
//                       for large ones on high-latency links.
//   tree                binomial reduce to the first member, then binomial broadcast: 2 ceil(log2 n)
//                       messages of m bytes on the critical path.
// World sizes that are not a power of two: recursive-doubling and halving-doubling first fold the
// first 2(n-p) members pairwise (one sends its vector to the other, which adds it), run on p
// members, then send the result back; tree and ring need no folding.
//
// Every algorithm leaves the same bits on every member (a sum is computed once and copied, or by
// two partners as a + b and b + a, which IEEE arithmetic makes equal), and the same bits from run to
// run for a given algorithm and world. Different algorithms add in different orders: their results
// agree within floating-point reassociation.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fast/runtime/network_model.hpp"

namespace fast::collective {

enum class AllreduceAlgorithm : std::uint8_t { automatic, ring, recursive_doubling, halving_doubling, tree };

// "auto", "ring", "recursive-doubling", "halving-doubling", "tree".
std::string_view name_of(AllreduceAlgorithm algorithm);
// Inverse of name_of; InvalidArgument naming `what` and listing the names otherwise.
AllreduceAlgorithm parse_allreduce_algorithm(std::string_view name, std::string_view what = "allreduce_algorithm");
// Every name parse_allreduce_algorithm accepts, "auto" first.
std::vector<std::string> allreduce_algorithm_names();

// The network assumed by real runtimes (threads, zmq, mpi) when none is configured: measured in
// one process of the 2-core reference machine (docs/benchmarks.md (a)), the same on every real
// runtime so that a seed gives the same bits under threads, zmq and mpi.
runtime::NetworkModel default_network();

// Predicted seconds of one all-reduce of `bytes` bytes among `members` workers under `network`
// (the latency-bandwidth model with a local pass term; docs/collectives.md gives the formulas).
// `algorithm` must not be automatic.
double predicted_seconds(AllreduceAlgorithm algorithm, std::size_t bytes, int members,
                         const runtime::NetworkModel& network);

// Bytes one worker sends in one all-reduce of `bytes` bytes among `members` workers (the most any
// worker sends; not automatic).
double bytes_sent(AllreduceAlgorithm algorithm, std::size_t bytes, int members);

// How close to the fastest prediction counts as a tie (a fraction of it).
inline constexpr double kNearTie = 0.01;

// The algorithm of least predicted time; among those within kNearTie of it, the one that sends the
// fewest bytes (then: ring, halving-doubling, recursive-doubling, tree). A pure function of its
// arguments, so every member picks the same.
AllreduceAlgorithm choose_allreduce(std::size_t bytes, int members, const runtime::NetworkModel& network);

// The same model for the other collectives that move whole vectors. Strictly cheaper only (ties
// keep the first-named algorithm):
// whether a binomial tree beats the pipelined chain (pieces of chunk_bytes) for a broadcast,
bool broadcast_by_tree(std::size_t bytes, int members, std::size_t chunk_bytes, const runtime::NetworkModel& network);
// and whether Bruck's algorithm beats the ring for an all-gather of `bytes` per member.
bool allgather_by_bruck(std::size_t bytes, int members, const runtime::NetworkModel& network);

}  // namespace fast::collective
