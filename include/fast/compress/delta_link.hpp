#pragma once
// Sending a slowly changing tensor (a model, a parameter shard) through a lossy codec.
//
// Compressing a model directly loses most of it (top-k of the weights is not the weights). Instead
// both ends of a link keep the same reference r (float32, zero at first): the receiver's
// reconstruction of the sender's tensor. To send x, the sender encodes d = x - r and both ends add
// decode(payload) to r; the receiver uses r as the value received. What the codec drops stays in
// x - r and is sent later, so this is error feedback for states: r converges to x when x stops
// changing, and with a lossless codec r == x bit for bit after every message. This is the
// "compressed difference" scheme of CHOCO-gossip (Koloskova et al., 2019) and of compressed
// model pulls in parameter servers.
//
// Contract: the receiver applies the sender's payloads of one link in the order they were
// encoded (additions commute, so a reordering only delays, but rounding may then differ in the
// last bit). Input may be f32 or f64 (f64 is rounded to f32 for encoding; the reference is f32).
//
// Thread-safety: none; one DeltaSender and one DeltaReceiver per link and direction.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/compress/meter.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/tensor_view.hpp"

namespace fast::compress {

class DeltaSender {
 public:
  // n: the tensor's element count, fixed for the link. codec: not null (InvalidArgument).
  // initial: the reference both ends start from (empty: zeros; else n values, the same at the
  // receiver), e.g. the initial model every worker shares.
  DeltaSender(std::unique_ptr<Codec> codec, std::size_t n, std::span<const float> initial = {});
  // Encodes x - reference into out (u8) and adds its decoding to the reference. x has n elements,
  // f32 or f64. Adds (n * sizeof(x's dtype), out.size()) to meter when given. If the codec throws,
  // the reference is unchanged.
  void encode(core::ConstView x, core::Buffer& out, CompressionMeter* meter = nullptr);
  // The receiver's reconstruction of the last tensor sent.
  std::span<const float> reference() const noexcept { return reference_; }
  // The codec (its keep ratio may change between messages: Codec::set_keep_ratio).
  Codec& codec() noexcept { return *codec_; }
  // Checkpoints: the reference ("<prefix>.reference") and the codec's state ("<prefix>.codec").
  // restore: IoError naming `source` for a missing value or another length; nothing changes then.
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source);

 private:
  std::unique_ptr<Codec> codec_;
  std::vector<float> reference_;
  std::vector<float> diff_;
  std::vector<float> decoded_;
};

class DeltaReceiver {
 public:
  // codec: any codec of the sender's name (decode keeps no state); not null.
  DeltaReceiver(std::unique_ptr<Codec> codec, std::size_t n, std::span<const float> initial = {});
  // Validates payload (as Codec::decode: InvalidArgument, reference unchanged on any defect), then
  // adds its decoding to the reference, and returns the reference.
  std::span<const float> decode(core::ConstView payload);
  std::span<const float> reference() const noexcept { return reference_; }
  // Checkpoints: the reference ("<prefix>.reference"); as DeltaSender's.
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source);

 private:
  std::unique_ptr<Codec> codec_;
  std::vector<float> reference_;
  std::vector<float> decoded_;
};

// Writes a float32 span into dst (f32 or f64, same length).
void copy_into(std::span<const float> src, core::MutableView dst);

}  // namespace fast::compress
