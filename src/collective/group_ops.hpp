#pragma once
// Private helpers of the collectives (communicator.cpp, allreduce_algorithms.cpp): element ranges,
// scaling, index arithmetic and the wait-before-leaving rule. Not installed.

#include <algorithm>
#include <cstddef>
#include <exception>
#include <initializer_list>
#include <vector>

#include "fast/core/error.hpp"
#include "fast/core/tensor_view.hpp"
#include "fast/core/work.hpp"

namespace fast::collective::detail {

// Element range [begin, end).
struct Range {
  std::size_t begin, end;
  std::size_t size() const { return end - begin; }
};

// Range of piece `piece` of segment `segment` when `numel` elements are cut into `segments`
// near-equal segments, each cut into `pieces` near-equal pieces. Every worker computes the same.
inline Range piece_range(std::size_t numel, int segments, int segment, std::size_t pieces, std::size_t piece) {
  const std::size_t s_begin = numel * static_cast<std::size_t>(segment) / static_cast<std::size_t>(segments);
  const std::size_t s_end = numel * static_cast<std::size_t>(segment + 1) / static_cast<std::size_t>(segments);
  const std::size_t len = s_end - s_begin;
  return {s_begin + len * piece / pieces, s_begin + len * (piece + 1) / pieces};
}

inline int wrap(int value, int n) { return ((value % n) + n) % n; }

// Folding of a group of n members onto p = 2^floor(log2 n) (recursive doubling and
// halving-doubling): among the first 2(n - p) members, each even index hands its vector to the next
// odd one, which adds it, and sits out. Members that take part get a virtual index in [0, p): odd
// i < 2(n-p) -> i / 2, i >= 2(n-p) -> i - (n-p). Used by the message path, the shared path and the
// traffic count alike.
struct Folding {
  int p = 1;      // members taking part
  int extra = 0;  // n - p
  explicit Folding(int n) {
    while (p * 2 <= n) p *= 2;
    extra = n - p;
  }
  // The member index of virtual index v.
  int real(int v) const { return v < extra ? 2 * v + 1 : v + extra; }
  // The virtual index of member i, or -1 when it sits out.
  int virtual_index(int i) const { return i < 2 * extra ? (i % 2 == 0 ? -1 : i / 2) : i - extra; }
  // Whether member i is one of a folded pair (it sends or receives the result at the end).
  bool folded(int i) const { return i < 2 * extra; }
};

// Pieces per ring segment: each of the n segments of numel elements is cut into pieces of at most
// chunk_bytes (at least one piece).
inline std::size_t pieces_for(std::size_t numel, int n, std::size_t elem_bytes, std::size_t chunk_bytes) {
  const std::size_t segment = (numel + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
  const std::size_t chunk = std::max<std::size_t>(1, chunk_bytes / elem_bytes);
  return std::max<std::size_t>(1, (segment + chunk - 1) / chunk);
}

// v *= factor (f32 or f64).
inline void scale(core::MutableView v, double factor) {
  if (v.dtype() == core::DType::f32) {
    const float f = static_cast<float>(factor);
    for (float& x : v.as<float>()) x *= f;
  } else {
    for (double& x : v.as<double>()) x *= factor;
  }
}

// dst += src, element by element (same length and dtype, f32 or f64). dst + src and src + dst are
// the same number in IEEE arithmetic, so two partners adding each other's data agree bit for bit.
inline void add_into(core::MutableView dst, core::ConstView src) {
  if (dst.dtype() == core::DType::f32) {
    float* d = dst.as<float>().data();
    const float* s = src.as<float>().data();
    for (std::size_t i = 0, n = dst.numel(); i < n; ++i) d[i] += s[i];
  } else {
    double* d = dst.as<double>().data();
    const double* s = src.as<double>().data();
    for (std::size_t i = 0, n = dst.numel(); i < n; ++i) d[i] += s[i];
  }
}

inline void check_reducible(const core::MutableView& data) {
  FAST_ENFORCE(data.dtype() == core::DType::f32 || data.dtype() == core::DType::f64,
               "allreduce: expected f32 or f64 data, got {}", core::name_of(data.dtype()));
}

// Runs body; whether it returns or throws, waits for every operation in `pending` before leaving,
// so no send or receive still touches the caller's memory afterwards. Rethrows body's error first,
// else the first error of the operations.
template <typename Body>
void run_then_drain(Body&& body, std::initializer_list<std::vector<core::Work>*> pending) {
  try {
    body();
  } catch (...) {
    for (std::vector<core::Work>* works : pending) {
      try {
        core::wait_all(*works);
      } catch (const std::exception&) {
        // body's error wins. Only std exceptions are swallowed: the sim runtime kills an actor by
        // unwinding it with simgrid::ForcefulKillException, which must go through.
      }
    }
    throw;
  }
  for (std::vector<core::Work>* works : pending) core::wait_all(*works);
}

}  // namespace fast::collective::detail
