#include "allreduce_algorithms.hpp"

#include <algorithm>

#include "fast/core/error.hpp"
#include "group_ops.hpp"

namespace fast::collective::detail {

using core::MutableView;
using core::Work;
using runtime::make_tag;
using runtime::TagKind;

namespace {

constexpr std::uint32_t kFoldDetail = 100;       // a folded member's vector to its partner
constexpr std::uint32_t kUnfoldDetail = 101;     // the result back to the folded member
constexpr std::uint32_t kBroadcastDetail = 200;  // tree: + round, the broadcast phase

runtime::Tag tag_of(const GroupCall& g, std::uint32_t detail) {
  return make_tag(TagKind::collective, g.sequence, detail);
}

int rank_at(const GroupCall& g, int index) { return g.members[static_cast<std::size_t>(index)]; }

MutableView scratch_for(const GroupCall& g, std::size_t numel, core::DType dtype) {
  if (g.scratch.numel() < numel || g.scratch.dtype() != dtype) g.scratch.resize(numel, dtype);
  return g.scratch.view().slice(0, numel);
}

// Sends `out` to `to` and receives `in` from `from` (copied, or added with Combine::sum), both in
// place; empty views are skipped (both sides agree on the sizes).
void exchange_copy(const GroupCall& g, int to, int from, std::uint32_t detail, core::ConstView out, MutableView in,
                   runtime::Combine combine = runtime::Combine::copy) {
  std::vector<Work> ops;
  ops.reserve(2);
  run_then_drain(
      [&] {
        if (out.numel() > 0) ops.push_back(g.ctx.send(to, tag_of(g, detail), out));
        if (in.numel() > 0) ops.push_back(g.ctx.recv(from, tag_of(g, detail), in, combine));
        core::wait_all(ops);
      },
      {&ops});
}

// Sends `mine` to `peer` and receives the same number of elements from it into scratch, then adds
// them into `mine` (after the peer has read it: its memory may be read in place).
void exchange_add(const GroupCall& g, int peer, std::uint32_t detail, MutableView mine) {
  MutableView theirs = scratch_for(g, mine.numel(), mine.dtype());
  exchange_copy(g, peer, peer, detail, mine, theirs);
  add_into(mine, theirs);
}

void send_all(const GroupCall& g, int peer, std::uint32_t detail, core::ConstView data) {
  if (data.numel() > 0) g.ctx.send(peer, tag_of(g, detail), data).wait();
}

void recv_all(const GroupCall& g, int peer, std::uint32_t detail, MutableView data,
              runtime::Combine combine = runtime::Combine::copy) {
  if (data.numel() > 0) g.ctx.recv(peer, tag_of(g, detail), data, combine).wait();
}

// The folding's first exchange (group_ops.hpp's Folding): a folded even member hands its vector to
// the next odd one, whose receive adds it (Combine::sum: no scratch, the same one addition per
// element as receiving into scratch and adding).
Folding fold_in(const GroupCall& g, MutableView data) {
  const Folding f(static_cast<int>(g.members.size()));
  const int i = g.index;
  if (!f.folded(i)) return f;
  if (f.virtual_index(i) < 0) {
    send_all(g, rank_at(g, i + 1), kFoldDetail, data);
    return f;  // sits out
  }
  recv_all(g, rank_at(g, i - 1), kFoldDetail, data, runtime::Combine::sum);
  return f;
}

// The result to (odd member) or from (even member, sitting out) the folding partner.
void fold_out(const GroupCall& g, const Folding& f, MutableView data) {
  const int i = g.index;
  if (!f.folded(i)) return;
  if (f.virtual_index(i) < 0)
    recv_all(g, rank_at(g, i + 1), kUnfoldDetail, data);
  else
    send_all(g, rank_at(g, i - 1), kUnfoldDetail, data);
}

}  // namespace

// Round k (distance d = 2^k): exchange the whole vector with virtual partner v xor d and add.
void recursive_doubling_allreduce(const GroupCall& g, MutableView data, ReduceOp op) {
  const int n = static_cast<int>(g.members.size());
  if (n == 1 || data.numel() == 0) return;
  const Folding f = fold_in(g, data);
  if (const int v = f.virtual_index(g.index); v >= 0) {
    std::uint32_t round = 0;
    for (int d = 1; d < f.p; d *= 2, ++round) exchange_add(g, rank_at(g, f.real(v ^ d)), round, data);
    if (op == ReduceOp::avg) scale(data, 1.0 / n);
  }
  fold_out(g, f, data);
}

// Reduce-scatter by recursive halving: at distance d = p/2, p/4, ..., 1 the current range is cut in
// two halves; the member whose bit d is 0 keeps the lower half and sends the upper one, its
// partner the reverse, and each adds what it receives into the half it keeps. Then each member
// owns the sum of one block of about m/p elements, scales it for an average, and the all-gather by
// recursive doubling (d = 1, 2, ..., p/2) trades owned ranges back until everyone has everything.
void halving_doubling_allreduce(const GroupCall& g, MutableView data, ReduceOp op) {
  const int n = static_cast<int>(g.members.size());
  if (n == 1 || data.numel() == 0) return;
  const Folding f = fold_in(g, data);
  if (const int v = f.virtual_index(g.index); v >= 0) {
    std::vector<Range> parents;  // the range before each halving step, outermost first
    Range mine{0, data.numel()};
    std::uint32_t round = 0;
    for (int d = f.p / 2; d >= 1; d /= 2, ++round) {
      parents.push_back(mine);
      const std::size_t mid = mine.begin + mine.size() / 2;
      const bool lower = (v & d) == 0;
      const Range keep = lower ? Range{mine.begin, mid} : Range{mid, mine.end};
      const Range give = lower ? Range{mid, mine.end} : Range{mine.begin, mid};
      const int peer = rank_at(g, f.real(v ^ d));
      // The two halves are disjoint: the peer's half is added into the kept one by the receive.
      exchange_copy(g, peer, peer, round, data.slice(give.begin, give.size()), data.slice(keep.begin, keep.size()),
                    runtime::Combine::sum);
      mine = keep;
    }
    if (op == ReduceOp::avg) scale(data.slice(mine.begin, mine.size()), 1.0 / n);
    for (int d = 1; d < f.p; d *= 2, ++round) {
      const Range parent = parents.back();
      parents.pop_back();
      const Range other = mine.begin == parent.begin ? Range{mine.end, parent.end} : Range{parent.begin, mine.begin};
      const int peer = rank_at(g, f.real(v ^ d));
      exchange_copy(g, peer, peer, round, data.slice(mine.begin, mine.size()), data.slice(other.begin, other.size()));
      mine = parent;
    }
  }
  fold_out(g, f, data);
}

void bruck_allgather(const GroupCall& g, core::ConstView in, MutableView out) {
  const int n = static_cast<int>(g.members.size());
  const std::size_t b = in.numel();
  const auto block = [b](int j) { return b * static_cast<std::size_t>(j); };
  if (n == 1 || b == 0) {
    core::copy(in, out.slice(block(g.index), b));
    return;
  }
  // held[j] = the block of member (index + j) mod n, once received.
  MutableView held = scratch_for(g, block(n), in.dtype());
  core::copy(in, held.slice(0, b));
  std::uint32_t round = 0;
  for (int d = 1; d < n; d *= 2, ++round) {
    const int count = std::min(d, n - d);
    exchange_copy(g, rank_at(g, wrap(g.index - d, n)), rank_at(g, wrap(g.index + d, n)), round,
                  held.slice(0, block(count)), held.slice(block(d), block(count)));
  }
  for (int j = 0; j < n; ++j) core::copy(held.slice(block(j), b), out.slice(block(wrap(g.index + j, n)), b));
}

// Each member receives from its parent (relative index minus its lowest set bit d) and forwards to
// relative index + c for each power of two c below d, largest first.
void binomial_broadcast(const GroupCall& g, MutableView data, int root_index) {
  const int n = static_cast<int>(g.members.size());
  if (n == 1 || data.numel() == 0) return;
  const int v = wrap(g.index - root_index, n);  // index relative to the root
  const auto member = [&](int relative) { return rank_at(g, wrap(relative + root_index, n)); };
  int d = 1;
  std::uint32_t round = 0;
  while (d < n && (v & d) == 0) d *= 2, ++round;  // d: v's lowest set bit (the root: >= n)
  if (v != 0) recv_all(g, member(v - d), kBroadcastDetail + round, data);
  std::vector<Work> sends;
  run_then_drain(
      [&] {
        std::uint32_t child_round = round;
        for (int c = d / 2; c >= 1; c /= 2) {
          --child_round;
          if (v + c < n) sends.push_back(g.ctx.send(member(v + c), tag_of(g, kBroadcastDetail + child_round), data));
        }
      },
      {&sends});
}

// Binomial tree rooted at the first member. Reduce: at distance d = 1, 2, 4, ... a member whose
// bit d is set sends its partial sum to index - d and is done; the others add what index + d
// sends. Then binomial_broadcast from the first member.
void tree_allreduce(const GroupCall& g, MutableView data, ReduceOp op) {
  const int n = static_cast<int>(g.members.size());
  if (n == 1 || data.numel() == 0) return;
  const int i = g.index;
  std::uint32_t round = 0;
  for (int d = 1; d < n; d *= 2, ++round) {
    if ((i & d) != 0) {
      send_all(g, rank_at(g, i - d), round, data);
      break;
    }
    if (i + d < n) recv_all(g, rank_at(g, i + d), round, data, runtime::Combine::sum);
  }
  if (i == 0 && op == ReduceOp::avg) scale(data, 1.0 / n);
  binomial_broadcast(g, data, 0);
}

}  // namespace fast::collective::detail
