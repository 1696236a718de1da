// The all-reduce algorithms' sums computed in one address space (runtime::SharedRendezvous): see
// allreduce_algorithms.hpp.

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "allreduce_algorithms.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/shared_rendezvous.hpp"
#include "group_ops.hpp"

namespace fast::collective::detail {

namespace {

// What each worker publishes: its data and the call's arguments, checked against everyone's.
struct Published {
  void* data;
  std::size_t numel;
  core::DType dtype;
  ReduceOp op;
  AllreduceAlgorithm algorithm;
};

// Elements per pass: 1024, fewer for large worlds so that the n slots of partial sums stay within
// 1 MiB (in cache, and bounded per worker however many workers share the process).
template <typename T>
std::size_t block_for(int n) {
  const std::size_t fits = (std::size_t{1} << 20) / (static_cast<std::size_t>(n) * sizeof(T));
  return std::clamp<std::size_t>(fits, 64, 1024);
}

// Partial sums of one block of elements [begin, begin + len): part[k] points at member k's data
// or at slot k of the scratch space (n slots of `block` elements), never at another slot, so
// add(k, j), one message's add_into, may always write slot k: part[k] <- part[k] + part[j],
// elementwise (a + b == b + a in IEEE arithmetic, so which side received does not matter).
template <typename T>
class BlockSums {
 public:
  BlockSums(const std::vector<T*>& all, T* scratch, std::size_t block)
      : all_(all), scratch_(scratch), block_(block), part_(all.size()) {}

  void start(std::size_t begin, std::size_t len) {
    begin_ = begin;
    len_ = len;
    for (std::size_t r = 0; r < all_.size(); ++r) part_[r] = member(static_cast<int>(r));
  }
  // The folding of rd and hd (Folding, as fold_in): virtual index v < extra holds members 2v + 1
  // and 2v added (into slot v), the others member v + extra; afterwards part[v] is virtual index
  // v's partial.
  void fold(const Folding& f) {
    for (int v = 0; v < f.p; ++v) {
      if (v < f.extra) {
        T* s = slot(v);
        const T* odd = member(2 * v + 1);
        const T* even = member(2 * v);
        for (std::size_t i = 0; i < len_; ++i) s[i] = odd[i] + even[i];
        part_[static_cast<std::size_t>(v)] = s;
      } else {
        part_[static_cast<std::size_t>(v)] = member(f.real(v));
      }
    }
  }
  void add(int k, int j) {
    T* s = slot(k);
    const T* a = part_[static_cast<std::size_t>(k)];
    const T* b = part_[static_cast<std::size_t>(j)];
    for (std::size_t i = 0; i < len_; ++i) s[i] = a[i] + b[i];
    part_[static_cast<std::size_t>(k)] = s;
  }
  T* slot(int k) const { return scratch_ + static_cast<std::size_t>(k) * block_; }

 private:
  const T* member(int r) const { return all_[static_cast<std::size_t>(r)] + begin_; }

  const std::vector<T*>& all_;
  T* scratch_;
  std::size_t block_;
  std::vector<const T*> part_;
  std::size_t begin_ = 0, len_ = 0;
};

// The sum of one block in `algorithm`'s order; `segment`: the ring's segment of the block (the
// segment whose chain starts at that worker). Returns the slot that holds the sum (n >= 2: every
// order adds at least once into it).
template <typename T>
int block_sum(BlockSums<T>& s, AllreduceAlgorithm algorithm, int n, int segment) {
  switch (algorithm) {
    case AllreduceAlgorithm::ring:  // the chain x_j, + x_(j+1), ..., + x_(j-1) (ring_allreduce)
      for (int t = 1; t < n; ++t) s.add(segment, (segment + t) % n);
      return segment;
    case AllreduceAlgorithm::recursive_doubling: {  // pairs at distance 1, 2, 4, ...
      const Folding f(n);
      s.fold(f);
      for (int d = 1; d < f.p; d *= 2)
        for (int v = 0; v < f.p; v += 2 * d) s.add(v, v + d);
      return 0;
    }
    case AllreduceAlgorithm::halving_doubling: {  // pairs at distance p/2, p/4, ..., 1
      const Folding f(n);
      s.fold(f);
      for (int d = f.p / 2; d >= 1; d /= 2)
        for (int v = 0; v < d; ++v) s.add(v, v + d);
      return 0;
    }
    case AllreduceAlgorithm::tree:  // binomial reduction to member 0
      for (int d = 1; d < n; d *= 2)
        for (int i = 0; i + d < n; i += 2 * d) s.add(i, i + d);
      return 0;
    case AllreduceAlgorithm::automatic: break;
  }
  FAST_THROW(core::InvalidArgument, "shared allreduce: needs a concrete algorithm, got '{}'", name_of(algorithm));
}

// This worker's share of the elements (the ring's segment `index`): their sums, scaled for an
// average as the algorithms scale (scale() by 1/n), written into every member's data.
template <typename T>
void reduce_share(const std::vector<T*>& all, int index, std::size_t numel, ReduceOp op, AllreduceAlgorithm algorithm,
                  core::Buffer& scratch) {
  const int n = static_cast<int>(all.size());
  const Range range = piece_range(numel, n, index, 1, 0);
  if (range.size() == 0) return;
  const std::size_t block = block_for<T>(n);
  const std::size_t need = static_cast<std::size_t>(n) * block;
  if (scratch.numel() < need || scratch.dtype() != core::dtype_of_v<T>) scratch.resize(need, core::dtype_of_v<T>);
  T* space = scratch.view().as<T>().data();
  BlockSums<T> sums(all, space, block);
  for (std::size_t b = range.begin; b < range.end; b += block) {
    const std::size_t len = std::min(block, range.end - b);
    sums.start(b, len);
    T* out = sums.slot(block_sum(sums, algorithm, n, index));
    if (op == ReduceOp::avg) scale(core::MutableView(std::span<T>(out, len)), 1.0 / n);
    for (T* member : all) std::memcpy(member + b, out, len * sizeof(T));
  }
}

template <typename T>
std::vector<T*> data_of(void* const* published, int n) {
  std::vector<T*> out(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    out[static_cast<std::size_t>(r)] = static_cast<T*>(static_cast<const Published*>(published[r])->data);
  return out;
}

std::string describe(const Published& p) {
  return fmt::format("{} {} elements ({}, {})", p.numel, core::name_of(p.dtype), p.op == ReduceOp::sum ? "sum" : "avg",
                     name_of(p.algorithm));
}

// The first member whose arguments differ from this one's, or -1.
int first_mismatch(void* const* published, int n, const Published& mine) {
  for (int r = 0; r < n; ++r) {
    const auto& other = *static_cast<const Published*>(published[r]);
    if (other.numel != mine.numel || other.dtype != mine.dtype || other.op != mine.op ||
        other.algorithm != mine.algorithm)
      return r;
  }
  return -1;
}

}  // namespace

void shared_allreduce(runtime::SharedRendezvous& rendezvous, std::uint64_t ticket, int index, int n,
                      AllreduceAlgorithm algorithm, core::MutableView data, ReduceOp op, std::size_t chunk_bytes,
                      core::Buffer& scratch) {
  Published mine{data.data(), data.numel(), data.dtype(), op, algorithm};
  void* const* published = rendezvous.meet(ticket, &mine);
  const int bad = first_mismatch(published, n, mine);
  if (bad >= 0) {
    const std::string theirs = describe(*static_cast<const Published*>(published[bad]));
    rendezvous.leave(ticket);  // every member sees the same disagreement and fails alike
    FAST_THROW(core::InvalidArgument, "allreduce: worker {} passed {}, worker {} passed {}", bad, theirs, index,
               describe(mine));
  }
  try {
    if (data.dtype() == core::DType::f32)
      reduce_share(data_of<float>(published, n), index, data.numel(), op, algorithm, scratch);
    else
      reduce_share(data_of<double>(published, n), index, data.numel(), op, algorithm, scratch);
    // The traffic the message path would have had (members are ranks: the group is the world).
    for_each_message(algorithm, index, n, data.numel(), core::size_of(data.dtype()), chunk_bytes,
                     [&](int to, std::size_t bytes) { rendezvous.count_as_sent(to, bytes, 1); });
  } catch (...) {
    rendezvous.leave(ticket);
    throw;
  }
  rendezvous.leave(ticket);
}

}  // namespace fast::collective::detail
