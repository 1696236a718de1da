#include "fast/wire/requests.hpp"

#include <bit>
#include <cmath>

#include "fast/core/error.hpp"

namespace fast::wire {

// WindowRequest words: 0 op, 1 offset, 2 count, 3 dtype, 4 seq, 5 encoded (0 or 1), 6 scale (f64
// bits), 7 scale_at, 8 summed, 9 blocks, 10.. coefficients (f64 bits, kMaxBlocks of them).
std::array<std::int64_t, WindowRequest::kWords> WindowRequest::to_words() const {
  FAST_ENFORCE(coefficients.size() <= kMaxBlocks, "window request: blocks: expected at most {}, got {}", kMaxBlocks,
               coefficients.size());
  std::array<std::int64_t, kWords> w{};
  w[0] = static_cast<std::int64_t>(op);
  w[1] = static_cast<std::int64_t>(offset);
  w[2] = static_cast<std::int64_t>(count);
  w[3] = static_cast<std::int64_t>(dtype);
  w[4] = seq;
  w[5] = encoded ? 1 : 0;
  w[6] = std::bit_cast<std::int64_t>(scale);
  w[7] = scale_at;
  w[8] = static_cast<std::int64_t>(summed);
  w[9] = static_cast<std::int64_t>(coefficients.size());
  for (std::size_t k = 0; k < coefficients.size(); ++k) w[10 + k] = std::bit_cast<std::int64_t>(coefficients[k]);
  return w;
}

namespace {
bool known_op(std::int64_t op) { return (op >= 1 && op <= 7) || op == 9; }
}  // namespace

WindowRequest WindowRequest::from_words(std::span<const std::int64_t> w) {
  FAST_ENFORCE(w.size() == kWords, "window request: length: expected {} words, got {}", kWords, w.size());
  FAST_ENFORCE(known_op(w[0]), "window request: op: expected 1-7 or 9, got {}", w[0]);
  FAST_ENFORCE(w[1] >= 0 && w[2] >= 0, "window request: offset and count: expected >= 0, got {} and {}", w[1], w[2]);
  FAST_ENFORCE(w[3] >= 0 && w[3] <= static_cast<std::int64_t>(core::DType::u8),
               "window request: dtype: expected 0-6, got {}", w[3]);
  FAST_ENFORCE(w[4] >= 0 && w[4] <= 0xFFFFFFFF, "window request: seq: expected a 32-bit number, got {}", w[4]);
  FAST_ENFORCE(w[5] == 0 || w[5] == 1, "window request: encoded: expected 0 or 1, got {}", w[5]);
  FAST_ENFORCE(w[7] >= -1, "window request: scale_at: expected -1 or an element, got {}", w[7]);
  FAST_ENFORCE(w[9] >= 0 && w[9] <= static_cast<std::int64_t>(kMaxBlocks) && w[8] >= 0 && w[8] <= w[9],
               "window request: blocks and summed: expected 0 <= summed <= blocks <= {}, got {} summed of {}",
               kMaxBlocks, w[8], w[9]);
  WindowRequest r{.op = static_cast<Op>(w[0]),
                  .offset = static_cast<std::uint64_t>(w[1]),
                  .count = static_cast<std::uint64_t>(w[2]),
                  .dtype = static_cast<core::DType>(w[3]),
                  .seq = static_cast<std::uint32_t>(w[4]),
                  .encoded = w[5] == 1,
                  .scale = std::bit_cast<double>(w[6]),
                  .scale_at = w[7],
                  .summed = static_cast<std::uint64_t>(w[8])};
  for (std::int64_t k = 0; k < w[9]; ++k) {
    r.coefficients.push_back(std::bit_cast<double>(w[static_cast<std::size_t>(10 + k)]));
    FAST_ENFORCE(std::isfinite(r.coefficients.back()),
                 "window request: coefficient {}: expected a finite number, got {}", k, r.coefficients.back());
  }
  FAST_ENFORCE(r.op != Op::exchange_difference || (r.summed >= 1 && !r.coefficients.empty()),
               "window request: exchange_difference: expected 1 <= summed <= blocks, got {} summed of {}", r.summed,
               r.coefficients.size());
  FAST_ENFORCE(std::isfinite(r.scale), "window request: scale: expected a finite number, got {}", r.scale);
  return r;
}

const char* name_of(WindowRequest::Op op) noexcept {
  switch (op) {
    case WindowRequest::Op::put: return "put";
    case WindowRequest::Op::get: return "get";
    case WindowRequest::Op::accumulate: return "accumulate";
    case WindowRequest::Op::fetch_accumulate: return "fetch_accumulate";
    case WindowRequest::Op::fetch_average: return "fetch_average";
    case WindowRequest::Op::accumulate_scaled: return "accumulate_scaled";
    case WindowRequest::Op::exchange_difference: return "exchange_difference";
    case WindowRequest::Op::stop: return "stop";
  }
  return "unknown";
}

// PsRequest words: 0 kind, 1 clock, 2 version, 3 finite (0 or 1), 4 lr (f64 bits).
std::array<std::int64_t, PsRequest::kWords> PsRequest::to_words() const {
  return {static_cast<std::int64_t>(kind), clock, static_cast<std::int64_t>(version), finite ? 1 : 0,
          std::bit_cast<std::int64_t>(lr)};
}

PsRequest PsRequest::from_words(std::span<const std::int64_t> w) {
  FAST_ENFORCE(w.size() == kWords, "ps request: length: expected {} words, got {}", kWords, w.size());
  FAST_ENFORCE(w[0] >= 1 && w[0] <= 4, "ps request: kind: expected 1 (push), 2 (done), 3 (stop) or 4 (join), got {}",
               w[0]);
  FAST_ENFORCE(w[1] >= 0, "ps request: clock: expected >= 0, got {}", w[1]);
  FAST_ENFORCE(w[2] >= 0, "ps request: version: expected >= 0, got {}", w[2]);
  FAST_ENFORCE(w[3] == 0 || w[3] == 1, "ps request: finite: expected 0 or 1, got {}", w[3]);
  const double lr = std::bit_cast<double>(w[4]);
  FAST_ENFORCE(std::isfinite(lr), "ps request: lr: expected a finite number, got {}", lr);
  return {.kind = static_cast<Kind>(w[0]),
          .clock = w[1],
          .version = static_cast<std::uint64_t>(w[2]),
          .finite = w[3] == 1,
          .lr = lr};
}

}  // namespace fast::wire
