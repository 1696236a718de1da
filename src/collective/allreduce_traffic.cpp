// The messages each all-reduce algorithm sends (allreduce_algorithms.hpp, for_each_message): the
// same decisions as the algorithms themselves (allreduce_algorithms.cpp, Communicator::
// ring_allreduce), without sending anything. tests/collective/shared_allreduce_test.cpp checks
// that the shared path, which counts these, reports the message path's link statistics.

#include "allreduce_algorithms.hpp"
#include "fast/core/error.hpp"
#include "group_ops.hpp"

namespace fast::collective::detail {

namespace {

using Sent = std::function<void(int, std::size_t)>;

// Pieces of every step of the ring (ring_allreduce: step g sends segment (r - g) mod n to r + 1).
void ring_messages(int r, int n, std::size_t numel, std::size_t elem, std::size_t chunk_bytes, const Sent& sent) {
  const std::size_t pieces = pieces_for(numel, n, elem, chunk_bytes);
  for (int g = 0; g < 2 * (n - 1); ++g)
    for (std::size_t k = 0; k < pieces; ++k) {
      const Range out = piece_range(numel, n, wrap(r - g, n), pieces, k);
      if (out.size() > 0) sent(wrap(r + 1, n), out.size() * elem);
    }
}

void folded_messages(AllreduceAlgorithm algorithm, int i, int n, std::size_t numel, std::size_t elem,
                     const Sent& sent) {
  const Folding f(n);
  const std::size_t m = numel * elem;
  const int v = f.virtual_index(i);
  if (v < 0) {
    sent(i + 1, m);  // fold_in; the result comes back from i + 1
    return;
  }
  if (algorithm == AllreduceAlgorithm::recursive_doubling) {
    for (int d = 1; d < f.p; d *= 2) sent(f.real(v ^ d), m);
  } else {  // halving-doubling: the ranges of halving_doubling_allreduce
    std::vector<Range> parents;
    Range mine{0, numel};
    for (int d = f.p / 2; d >= 1; d /= 2) {
      parents.push_back(mine);
      const std::size_t mid = mine.begin + mine.size() / 2;
      const bool lower = (v & d) == 0;
      const Range give = lower ? Range{mid, mine.end} : Range{mine.begin, mid};
      if (give.size() > 0) sent(f.real(v ^ d), give.size() * elem);
      mine = lower ? Range{mine.begin, mid} : Range{mid, mine.end};
    }
    for (int d = 1; d < f.p; d *= 2) {
      if (mine.size() > 0) sent(f.real(v ^ d), mine.size() * elem);
      mine = parents.back();
      parents.pop_back();
    }
  }
  if (f.folded(i)) sent(i - 1, m);  // fold_out: the result to the member that sat out
}

// tree_allreduce: the binomial reduction to index 0, then binomial_broadcast from it.
void tree_messages(int i, int n, std::size_t numel, std::size_t elem, const Sent& sent) {
  const std::size_t m = numel * elem;
  for (int d = 1; d < n; d *= 2)
    if ((i & d) != 0) {
      sent(i - d, m);
      break;
    }
  int d = 1;
  while (d < n && (i & d) == 0) d *= 2;
  for (int c = d / 2; c >= 1; c /= 2)
    if (i + c < n) sent(i + c, m);
}

}  // namespace

void for_each_message(AllreduceAlgorithm algorithm, int index, int n, std::size_t numel, std::size_t elem_bytes,
                      std::size_t chunk_bytes, const std::function<void(int to_index, std::size_t bytes)>& sent) {
  if (n == 1 || numel == 0) return;
  switch (algorithm) {
    case AllreduceAlgorithm::ring: return ring_messages(index, n, numel, elem_bytes, chunk_bytes, sent);
    case AllreduceAlgorithm::recursive_doubling:
    case AllreduceAlgorithm::halving_doubling: return folded_messages(algorithm, index, n, numel, elem_bytes, sent);
    case AllreduceAlgorithm::tree: return tree_messages(index, n, numel, elem_bytes, sent);
    case AllreduceAlgorithm::automatic: break;
  }
  FAST_THROW(core::InvalidArgument, "for_each_message: needs a concrete algorithm, got '{}'", name_of(algorithm));
}

}  // namespace fast::collective::detail
