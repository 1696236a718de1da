// PowerSgdState (fast/compress/powersgd.hpp) and the point-to-point "powersgd" codec.
//   powersgd body: u64 B (matrix blocks), then B x {u64 offset, u64 rows, u64 cols, u64 rank} (offsets
//   increasing, blocks not overlapping, inside n, 1 <= rank <= min(rows, cols)), then per block P
//   (rows x rank f32, row-major, orthonormal columns or zero) and Q (cols x rank f32), then the elements
//   outside every block as f32, in increasing index order. decode = P Q^T on each block, the rest copied.

#include "fast/compress/powersgd.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "codecs.hpp"
#include "fast/core/error.hpp"
#include "fast/core/random.hpp"
#include "fast/core/saved_state.hpp"
#include "wire.hpp"

namespace fast::compress {

namespace {

// Standard normal values from a counter-based stream: out[i], out[i + 1] (i even) are the
// Box-Muller pair of outputs i + 1 and i + 2 of SplitMix64(key).
void fill_normal(std::span<float> out, std::uint64_t key) {
  for (std::size_t i = 0; i < out.size(); i += 2) {
    const double u1 = core::uniform01_left_open(core::splitmix64_at(key, 2 * i + 1));
    const double u2 = core::uniform01(core::splitmix64_at(key, 2 * i + 2));
    const core::NormalPair z = core::box_muller(u1, u2);
    out[i] = static_cast<float>(z.first);
    if (i + 1 < out.size()) out[i + 1] = static_cast<float>(z.second);
  }
}

}  // namespace

PowerSgdState::PowerSgdState(const core::Layout& layout, std::size_t n, PowerSgdOptions options)
    : n_(n), options_(options) {
  FAST_ENFORCE(options.rank >= 1, "powersgd: rank expected >= 1, got {}", options.rank);
  std::size_t at = 0, q_size = 0, end = 0;  // at: end of the last matrix block; end: of any block
  for (const core::TensorBlock& b : layout) {
    FAST_ENFORCE(b.offset >= end, "powersgd: layout block '{}' at offset {} overlaps the previous one (ends at {})",
                 b.name, b.offset, end);
    FAST_ENFORCE(b.offset <= n && b.numel <= n - b.offset,
                 "powersgd: layout block '{}' [{}, {}) exceeds the buffer of n = {} elements", b.name, b.offset,
                 b.offset + b.numel, n);
    end = b.offset + b.numel;
    if (b.is_matrix()) {
      FAST_ENFORCE(b.numel % b.rows == 0, "powersgd: layout block '{}' of {} elements is not {} whole rows", b.name,
                   b.numel, b.rows);
      if (b.offset > at) dense_.emplace_back(at, b.offset);
      const std::size_t r = std::min({options.rank, b.rows, b.cols()});
      blocks_.push_back({b.offset, b.rows, b.cols(), r, p_size_, q_size});
      p_size_ += b.rows * r;
      q_size += b.cols() * r;
      at = b.offset + b.numel;
    }
  }
  if (at < n) dense_.emplace_back(at, n);
  for (auto [lo, hi] : dense_) dense_size_ += hi - lo;
  q_.resize(q_size);
  reset_q();
}

void PowerSgdState::save(std::string_view prefix, core::SavedState& out) const {
  out.arrays.insert_or_assign(std::string(prefix) + ".q", q_);
  out.integers.insert_or_assign(std::string(prefix) + ".draws", static_cast<std::int64_t>(draws_));
}

void PowerSgdState::restore(std::string_view prefix, const core::SavedState& in, std::string_view source) {
  const std::vector<float>& q = in.array(std::string(prefix) + ".q", q_.size(), source);
  const std::int64_t draws =
      in.integer(std::string(prefix) + ".draws", 0, std::numeric_limits<std::int64_t>::max(), source);
  q_ = q;
  draws_ = static_cast<std::uint64_t>(draws);
}

void PowerSgdState::reset_q() { fill_normal(q_, core::mix64(options_.seed ^ core::mix64(++draws_))); }

void PowerSgdState::compute_p(std::span<const float> m, std::span<float> p) const {
  FAST_ENFORCE(m.size() == n_ && p.size() == p_size_,
               "powersgd compute_p: m of {} and p of {} floats, expected {} and {}", m.size(), p.size(), n_, p_size_);
  for (const LowRankBlock& b : blocks_) {
    const std::size_t r = b.rank;
    const float* q = q_.data() + b.q_offset;
    for (std::size_t i = 0; i < b.rows; ++i) {
      const float* row = m.data() + b.offset + i * b.cols;
      float acc[8] = {};
      float* out = p.data() + b.p_offset + i * r;
      if (r <= 8) {
        for (std::size_t j = 0; j < b.cols; ++j)
          for (std::size_t c = 0; c < r; ++c) acc[c] += row[j] * q[j * r + c];
        std::copy(acc, acc + r, out);
      } else {
        std::fill(out, out + r, 0.0f);
        for (std::size_t j = 0; j < b.cols; ++j)
          for (std::size_t c = 0; c < r; ++c) out[c] += row[j] * q[j * r + c];
      }
    }
  }
}

void PowerSgdState::orthonormalise(std::span<float> p) const {
  FAST_ENFORCE(p.size() == p_size_, "powersgd orthonormalise: p of {} floats, expected {}", p.size(), p_size_);
  std::vector<double> col, prev;
  for (const LowRankBlock& b : blocks_) {
    const std::size_t r = b.rank, rows = b.rows;
    float* P = p.data() + b.p_offset;
    for (std::size_t c = 0; c < r; ++c) {
      col.assign(rows, 0.0);
      double before = 0;
      for (std::size_t i = 0; i < rows; ++i) {
        col[i] = P[i * r + c];
        before += col[i] * col[i];
      }
      for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t d = 0; d < c; ++d) {
          double dot = 0;
          for (std::size_t i = 0; i < rows; ++i) dot += col[i] * P[i * r + d];
          for (std::size_t i = 0; i < rows; ++i) col[i] -= dot * P[i * r + d];
        }
      }
      double after = 0;
      for (std::size_t i = 0; i < rows; ++i) after += col[i] * col[i];
      const bool keep = std::isfinite(after) && after > 0 && after > 1e-12 * before;
      const double scale = keep ? 1.0 / std::sqrt(after) : 0.0;
      for (std::size_t i = 0; i < rows; ++i) P[i * r + c] = static_cast<float>(col[i] * scale);
    }
  }
}

void PowerSgdState::compute_q(std::span<const float> m, std::span<const float> p, std::span<float> q) const {
  FAST_ENFORCE(m.size() == n_ && p.size() == p_size_ && q.size() == q_.size(),
               "powersgd compute_q: m, p, q of {}, {}, {} floats, expected {}, {}, {}", m.size(), p.size(), q.size(),
               n_, p_size_, q_.size());
  for (const LowRankBlock& b : blocks_) {
    const std::size_t r = b.rank;
    float* Q = q.data() + b.q_offset;
    std::fill(Q, Q + b.cols * r, 0.0f);
    for (std::size_t i = 0; i < b.rows; ++i) {
      const float* row = m.data() + b.offset + i * b.cols;
      const float* P = p.data() + b.p_offset + i * r;
      for (std::size_t j = 0; j < b.cols; ++j)
        for (std::size_t c = 0; c < r; ++c) Q[j * r + c] += row[j] * P[c];
    }
  }
}

void PowerSgdState::set_q(std::span<const float> q) {
  FAST_ENFORCE(q.size() == q_.size(), "powersgd set_q: q of {} floats, expected {}", q.size(), q_.size());
  std::copy(q.begin(), q.end(), q_.begin());
  // A zero column (the matrix was zero, or lacked that direction) would stay zero under every later
  // power iteration (P = M Q = 0): it is redrawn from the seed's stream, so the next step can find
  // the direction again.
  std::vector<float> fresh;
  for (const LowRankBlock& b : blocks_)
    for (std::size_t c = 0; c < b.rank; ++c) {
      float* col = q_.data() + b.q_offset;
      bool zero = true;
      for (std::size_t j = 0; j < b.cols && zero; ++j) zero = col[j * b.rank + c] == 0.0f;
      if (!zero) continue;
      fresh.resize(b.cols);
      fill_normal(fresh, core::mix64(options_.seed ^ core::mix64(++draws_)));
      for (std::size_t j = 0; j < b.cols; ++j) col[j * b.rank + c] = fresh[j];
    }
}

namespace {

// out block (rows x cols at out) = P Q^T.
void low_rank_product(const float* P, const float* Q, std::size_t rows, std::size_t cols, std::size_t r, float* out) {
  for (std::size_t i = 0; i < rows; ++i) {
    float* row = out + i * cols;
    const float* pi = P + i * r;
    for (std::size_t j = 0; j < cols; ++j) {
      float s = 0;
      for (std::size_t c = 0; c < r; ++c) s += pi[c] * Q[j * r + c];
      row[j] = s;
    }
  }
}

}  // namespace

void PowerSgdState::reconstruct(std::span<const float> p, std::span<const float> q, std::span<float> out) const {
  FAST_ENFORCE(p.size() == p_size_ && q.size() == q_.size() && out.size() == n_,
               "powersgd reconstruct: p, q, out of {}, {}, {} floats, expected {}, {}, {}", p.size(), q.size(),
               out.size(), p_size_, q_.size(), n_);
  for (const LowRankBlock& b : blocks_)
    low_rank_product(p.data() + b.p_offset, q.data() + b.q_offset, b.rows, b.cols, b.rank, out.data() + b.offset);
}

namespace {

constexpr std::size_t kBlockRecord = 32;

class PowerSgdCodec final : public Codec {
 public:
  PowerSgdCodec(PowerSgdOptions options, const core::Layout* layout) : options_(options) {
    if (layout != nullptr) layout_ = *layout;
  }
  std::string_view name() const override { return "powersgd"; }

  // Exact for the codec's layout (every n its blocks fit in), else for the flat layout (all dense).
  std::size_t encoded_bytes(std::size_t n) const override {
    std::size_t bytes = kHeaderBytes + 8 + 4 * n;
    if (!layout_) return bytes;
    std::size_t end = 0;
    for (const auto& b : *layout_) end = std::max(end, b.offset + b.numel);
    if (end > n) return bytes;
    for (const auto& b : *layout_) {
      if (!b.is_matrix()) continue;
      const std::size_t r = std::min({options_.rank, b.rows, b.cols()});
      bytes += kBlockRecord + 4 * r * (b.rows + b.cols()) - 4 * b.numel;
    }
    return bytes;
  }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    std::uint32_t worst = 0;
    for (const float v : x) worst = std::max(worst, std::bit_cast<std::uint32_t>(v) & 0x7fffffffu);
    if (worst >= 0x7f800000u)
      for (std::size_t i = 0; i < x.size(); ++i)
        FAST_ENFORCE(std::isfinite(x[i]), "codec 'powersgd': element {} = {} is not finite", i, x[i]);
    if (!state_ || state_->size() != x.size()) {
      state_.emplace(layout_ ? *layout_ : core::flat_layout(x.size()), x.size(), options_);
    } else if (!options_.warm_start) {
      state_->reset_q();
    }
    PowerSgdState& s = *state_;
    p_.resize(s.p_size());
    q_.resize(s.q_size());
    s.compute_p(x, p_);
    s.orthonormalise(p_);
    s.compute_q(x, p_, q_);
    s.set_q(q_);
    const std::size_t nb = s.blocks().size();
    const std::size_t bytes = kHeaderBytes + 8 + kBlockRecord * nb + 4 * (s.p_size() + s.q_size() + s.dense_size());
    std::uint8_t* body = wire::begin_payload(out, bytes, CodecId::powersgd, x.size());
    wire::put<std::uint64_t>(body, nb);
    std::uint8_t* w = body + 8;
    for (const LowRankBlock& b : s.blocks()) {
      for (std::uint64_t v : {b.offset, b.rows, b.cols, b.rank}) wire::put<std::uint64_t>(w, v), w += 8;
    }
    for (const LowRankBlock& b : s.blocks()) {
      std::memcpy(w, p_.data() + b.p_offset, 4 * b.rows * b.rank);
      w += 4 * b.rows * b.rank;
      std::memcpy(w, q_.data() + b.q_offset, 4 * b.cols * b.rank);
      w += 4 * b.cols * b.rank;
    }
    for (auto [lo, hi] : s.dense_ranges()) {
      std::memcpy(w, x.data() + lo, 4 * (hi - lo));
      w += 4 * (hi - lo);
    }
  }

  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), CodecId::powersgd, payload, out);
    const std::size_t n = out.numel();
    const std::size_t size = p.size();
    FAST_ENFORCE(size >= kHeaderBytes + 8, "codec 'powersgd': truncated payload of {} bytes, expected at least {}",
                 size, kHeaderBytes + 8);
    const std::uint8_t* body = p.data() + kHeaderBytes;
    const auto nb = wire::get<std::uint64_t>(body);
    FAST_ENFORCE(nb <= (size - kHeaderBytes - 8) / kBlockRecord,
                 "codec 'powersgd': truncated payload: {} block records do not fit in {} bytes", nb, size);
    struct Rec {
      std::size_t offset, rows, cols, rank;
    };
    std::vector<Rec> recs(nb);
    std::size_t at = 0, floats = 0;  // end of the previous block; P, Q and dense floats expected
    for (std::size_t j = 0; j < nb; ++j) {
      const std::uint8_t* r = body + 8 + kBlockRecord * j;
      Rec b{wire::get<std::uint64_t>(r), wire::get<std::uint64_t>(r + 8), wire::get<std::uint64_t>(r + 16),
            wire::get<std::uint64_t>(r + 24)};
      FAST_ENFORCE(b.offset >= at && b.offset <= n,
                   "codec 'powersgd': block {} at offset {} out of order or range, expected in [{}, n = {}]", j,
                   b.offset, at, n);
      FAST_ENFORCE(b.rows >= 1 && b.cols >= 1 && b.rows <= n - b.offset && b.cols <= (n - b.offset) / b.rows,
                   "codec 'powersgd': block {} of {} x {} at offset {} out of range, expected inside n = {}", j, b.rows,
                   b.cols, b.offset, n);
      FAST_ENFORCE(b.rank >= 1 && b.rank <= std::min(b.rows, b.cols),
                   "codec 'powersgd': block {} rank {} out of range, expected 1..min({}, {})", j, b.rank, b.rows,
                   b.cols);
      at = b.offset + b.rows * b.cols;
      floats += b.rank * (b.rows + b.cols) - b.rows * b.cols;  // wraps: replaced by the dense count below
      recs[j] = b;
    }
    floats += n;  // every element dense, minus each block's elements, plus its P and Q
    wire::check_length(name(), size, kHeaderBytes + 8 + kBlockRecord * nb + 4 * floats,
                       "16-byte header + 8 + 32 B + 4 (P, Q and dense floats)");
    auto y = out.as<float>();
    const std::uint8_t* rd = body + 8 + kBlockRecord * nb;
    std::vector<float> P, Q;
    std::size_t dense_from = 0;
    const std::uint8_t* dense = rd;
    for (const Rec& b : recs) dense += 4 * b.rank * (b.rows + b.cols);
    auto copy_dense = [&](std::size_t lo, std::size_t hi) {
      if (hi == lo) return;  // an empty output's data() may be null
      std::memcpy(y.data() + lo, dense, 4 * (hi - lo));
      dense += 4 * (hi - lo);
    };
    for (const Rec& b : recs) {
      P.resize(b.rows * b.rank);
      Q.resize(b.cols * b.rank);
      std::memcpy(P.data(), rd, 4 * P.size());
      rd += 4 * P.size();
      std::memcpy(Q.data(), rd, 4 * Q.size());
      rd += 4 * Q.size();
      copy_dense(dense_from, b.offset);
      low_rank_product(P.data(), Q.data(), b.rows, b.cols, b.rank, y.data() + b.offset);
      dense_from = b.offset + b.rows * b.cols;
    }
    copy_dense(dense_from, n);
  }

  const PowerSgdOptions& options() const noexcept { return options_; }

  // "<prefix>.n": the length of the tensor the state was made for (0: no encode yet), then the state's.
  void save_state(std::string_view prefix, core::SavedState& out) const override {
    out.integers.insert_or_assign(std::string(prefix) + ".n", static_cast<std::int64_t>(state_ ? state_->size() : 0));
    if (state_) state_->save(prefix, out);
  }
  void restore_state(std::string_view prefix, const core::SavedState& in, std::string_view source) override {
    const auto n = static_cast<std::size_t>(
        in.integer(std::string(prefix) + ".n", 0, std::numeric_limits<std::int64_t>::max(), source));
    if (n == 0) {
      state_.reset();
      return;
    }
    PowerSgdState restored(layout_ ? *layout_ : core::flat_layout(n), n, options_);
    restored.restore(prefix, in, source);
    state_.emplace(std::move(restored));
  }

 private:
  PowerSgdOptions options_;
  std::optional<core::Layout> layout_;
  std::optional<PowerSgdState> state_;
  std::vector<float> p_, q_;
};

}  // namespace

std::optional<PowerSgdOptions> powersgd_options_of(const Codec& codec) {
  const auto* p = dynamic_cast<const PowerSgdCodec*>(&codec);
  if (p == nullptr) return std::nullopt;
  return p->options();
}

std::unique_ptr<Codec> make_powersgd(PowerSgdOptions options, const core::Layout* layout) {
  return std::make_unique<PowerSgdCodec>(options, layout);
}

}  // namespace fast::compress
