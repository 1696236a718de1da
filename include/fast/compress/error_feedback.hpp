#pragma once
// Error feedback around any codec: what a lossy codec drops from one message is added to the next.
//
// For each key (a tensor, a link, or both: the caller composes the id), ErrorFeedback keeps a residual
// r (float64, n elements, zero at first use). encode(key, x, out):
//   c   = float32(x + r)             the value encoded
//   out = codec.encode(c)
//   r   = (x + r) - codec.decode(out)  in float64
// so, over any number of steps, sum of decoded messages + residual(key) == sum of inputs up to float64
// rounding (the float32 rounding of c is kept in r, not lost).
// A key's tensor size is fixed at its first encode; another size is InvalidArgument. If the codec throws,
// the residual is unchanged.
//
// Thread-safety: not synchronised. Use one ErrorFeedback per link (it owns its codec and that codec's
// random stream); the receiver decodes with any codec of the same name.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fast/compress/codec.hpp"

namespace fast::compress {

class ErrorFeedback {
 public:
  // Takes the codec (not null; InvalidArgument otherwise).
  explicit ErrorFeedback(std::unique_ptr<Codec> codec);

  // Encodes input (f32) plus the residual of key into out (u8 payload of codec()), updates the residual.
  void encode(std::uint64_t key, core::ConstView input, core::Buffer& out);
  // The residual of key (empty if key was never encoded).
  std::span<const double> residual(std::uint64_t key) const;
  // Forgets the residual of key (next encode starts from zero).
  void reset(std::uint64_t key);
  // Forgets every key's residual (each key's next encode starts from zero); the codec and its
  // random stream stay as they are.
  void reset_all() noexcept { residuals_.clear(); }
  // What the last encode's payload decodes to, this sender's own message (empty before the first
  // encode; overwritten by the next one).
  std::span<const float> last_sent() const noexcept { return decoded_; }
  // Sets the residual of key to zero wherever last_sent() is nonzero, the coordinates the last
  // message carried (compress::Dgc's momentum factor masking). The last encode must have been of
  // key: InvalidArgument when key has no residual or another length.
  void clear_sent(std::uint64_t key);

  // Checkpoints: every key's residual as the float64 array "<prefix>.residual.<key>", and the
  // codec's state under "<prefix>.codec". restore replaces every residual with the saved ones (keys
  // that saved none start from zero again); IoError naming `source` for a malformed name, and then
  // nothing changes.
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source);

  Codec& codec() noexcept { return *codec_; }
  const Codec& codec() const noexcept { return *codec_; }

 private:
  std::unique_ptr<Codec> codec_;
  std::unordered_map<std::uint64_t, std::vector<double>> residuals_;
  std::vector<float> corrected_;  // scratch: float32(x + r)
  std::vector<float> decoded_;    // scratch: decode(encode(corrected_))
};

}  // namespace fast::compress
