#pragma once
// PowerSGD (Vogels et al. 2019): rank-r approximation of each matrix of a gradient by one warm-started
// power iteration. Two users:
//   - the point-to-point codec "powersgd:rank=R,warm_start=true|false" (make_codec, codec.hpp), which
//     sends P and Q of each matrix block and the other elements dense;
//   - a low-rank ALL-REDUCE built in collective/ from the primitives of PowerSgdState below.
//
// Per matrix block M (rows x cols, row-major, a TensorBlock with is_matrix()) and its Q (cols x r):
//   P = M Q              (rows x r)
//   P = orthonormalise(P)  (columns, Gram-Schmidt)
//   Q = M^T P            (cols x r)
//   approximation = P Q^T; Q is kept for the next step (warm start).
// r = min(rank, rows, cols) per block. Blocks that are not matrices (vectors, biases, a flat buffer
// without layout) are not approximated: they travel dense.
//
// Low-rank all-reduce over W workers with gradients M_w (same layout, same seed on every worker so the
// initial Q agree; Q then stays identical because every worker sets the same averaged Q):
//   1. p = state.compute_p(M_w)                 local P_w = M_w Q
//   2. all-reduce-sum p                         P = sum_w M_w Q = (sum_w M_w) Q
//   3. state.orthonormalise(p)                  the same deterministic result on every worker
//   4. q = state.compute_q(M_w, p)              local Q_w = M_w^T P
//   5. all-reduce-sum q, then divide by W       Q = mean_w(M_w)^T P
//   6. state.set_q(q)                           warm start for the next step (call reset_q() instead
//                                               at the start of each step when warm_start is false)
//   7. state.reconstruct(p, q, out)             out = P Q^T = P P^T mean(M) on the matrix blocks
//   8. the dense elements (state.dense_ranges()) are all-reduced normally (sum / W)
//   error feedback: residual_w = M_w - approximation (the local gradient minus what was applied),
//   added to the next step's M_w before step 1.
// Traffic per step: p_size() + q_size() floats per worker instead of the matrix elements.
//
// Orthonormalisation is modified Gram-Schmidt applied twice ("twice is enough"), in double: a column
// whose norm after removing the previous columns is below 1e-6 of its norm before (dependent) or zero
// becomes the zero column, so P^T P is diagonal with entries 1 or 0 and P P^T stays a projection.
//
// Not synchronised: one state per link or per worker.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "fast/core/layout.hpp"

namespace fast::core {
struct SavedState;  // fast/core/saved_state.hpp
}  // namespace fast::core

namespace fast::compress {

struct PowerSgdOptions {
  std::size_t rank = 4;    // r >= 1; per block min(rank, rows, cols)
  bool warm_start = true;  // keep Q between steps (else redraw it from the seed's stream each step)
  std::uint64_t seed = 0;  // feeds the initial (and, without warm start, every) Q
};

// A matrix block of the layout and where its factors sit in the P and Q buffers (row-major).
struct LowRankBlock {
  std::size_t offset = 0;  // first element of M in the flat buffer
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t rank = 0;      // min(options.rank, rows, cols)
  std::size_t p_offset = 0;  // P: rows x rank floats at p[p_offset]
  std::size_t q_offset = 0;  // Q: cols x rank floats at q[q_offset]
};

class PowerSgdState {
 public:
  // layout: the tensors of a buffer of n elements; blocks must be sorted by offset, not overlap and end
  // at or before n (elements outside every block are dense). InvalidArgument otherwise, naming the block.
  PowerSgdState(const core::Layout& layout, std::size_t n, PowerSgdOptions options);

  std::size_t size() const noexcept { return n_; }
  const PowerSgdOptions& options() const noexcept { return options_; }
  const std::vector<LowRankBlock>& blocks() const noexcept { return blocks_; }
  // [begin, end) ranges of the elements outside every matrix block, increasing.
  const std::vector<std::pair<std::size_t, std::size_t>>& dense_ranges() const noexcept { return dense_; }
  std::size_t dense_size() const noexcept { return dense_size_; }
  std::size_t p_size() const noexcept { return p_size_; }
  std::size_t q_size() const noexcept { return q_.size(); }
  // The current Q of every block (q_size() floats).
  std::span<const float> q() const noexcept { return q_; }

  // p (p_size()) = M Q per block, M read from m (size()).
  void compute_p(std::span<const float> m, std::span<float> p) const;
  // Orthonormalises the columns of each block's P in place (see the top of this file).
  void orthonormalise(std::span<float> p) const;
  // q (q_size()) = M^T P per block.
  void compute_q(std::span<const float> m, std::span<const float> p, std::span<float> q) const;
  // Keeps q as the Q of the next compute_p.
  void set_q(std::span<const float> q);
  // Draws a fresh Q from the seed's stream (advances it): the start of a step without warm start.
  void reset_q();
  // out (size()) = P Q^T on every matrix block; the dense elements of out are left as they are.
  void reconstruct(std::span<const float> p, std::span<const float> q, std::span<float> out) const;

  // Checkpoints: Q and the stream's draw count, as "<prefix>.q" and "<prefix>.draws". restore takes
  // them back into a state of the same layout and options (IoError naming `source` for another
  // size; nothing changes then).
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source);

 private:
  std::size_t n_;
  PowerSgdOptions options_;
  std::vector<LowRankBlock> blocks_;
  std::vector<std::pair<std::size_t, std::size_t>> dense_;
  std::size_t dense_size_ = 0;
  std::size_t p_size_ = 0;
  std::vector<float> q_;
  std::uint64_t draws_ = 0;  // how many Q have been drawn from the stream
};

class Codec;
// The options of a codec made by make_codec("powersgd:..."), or nullopt for another codec.
std::optional<PowerSgdOptions> powersgd_options_of(const Codec& codec);

}  // namespace fast::compress
