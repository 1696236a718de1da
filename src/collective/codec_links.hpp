#pragma once
// CodecLinks: the codec state of a Window's links (window_service.cpp's service, window.cpp's requests). Internal
// to the collective layer.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fast/collective/window.hpp"
#include "fast/compress/codec.hpp"
#include "fast/compress/delta_link.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
#include "fast/core/random.hpp"
#include "window_arithmetic.hpp"

namespace fast::core {
struct SavedState;
}  // namespace fast::core

namespace fast::collective::detail {

// One worker's codec state for the links of a window, keyed by (peer, offset, count): error
// feedback for the increments it sends, references for the states it sends and receives. Not
// synchronised (the owner's service uses its own; requesters lock Window::Links).
struct CodecLinks {
  using Key = std::tuple<int, std::size_t, std::size_t>;
  std::string spec;
  std::uint64_t seed = 0;
  const core::Layout* layout = nullptr;
  int rank = 0;
  compress::CompressionMeter* meter = nullptr;
  std::function<std::span<const float>(int)> initial;
  std::map<Key, std::unique_ptr<compress::ErrorFeedback>> feedback;
  std::map<Key, std::unique_ptr<compress::DeltaSender>> senders;
  std::map<Key, std::unique_ptr<compress::DeltaReceiver>> receivers;
  std::unique_ptr<compress::Codec> decoder;

  CodecLinks(const WindowOptions& o, int me)
      : spec(o.codec), seed(o.seed), layout(o.layout), rank(me), meter(o.meter), initial(o.initial) {
    decoder = compress::make_codec(spec);
  }
  // A codec for the link to `peer` over [offset, offset + count), with the layout's blocks inside that range.
  std::unique_ptr<compress::Codec> make(const Key& key, std::uint64_t direction) const {
    const auto [peer, offset, count] = key;
    const std::uint64_t s = ((seed * core::kGoldenGamma + static_cast<std::uint64_t>(rank)) * 0x100000001B3ull +
                             static_cast<std::uint64_t>(peer)) *
                                4 +
                            direction;
    if (layout == nullptr) return compress::make_codec(spec, s);
    const core::Layout range = core::sub_layout(*layout, offset, count);  // the blocks inside the range
    return compress::make_codec(spec, s, &range);
  }
  // The shared starting reference of range [offset, offset + count) of `owner`'s tensor (empty: zeros).
  std::span<const float> start(int owner, std::size_t offset, std::size_t count) const {
    if (!initial) return {};
    const std::span<const float> all = initial(owner);
    if (all.empty()) return {};
    FAST_ENFORCE(offset + count <= all.size(),
                 "window codec: initial values of worker {} hold {} elements, range [{}, {})", owner, all.size(),
                 offset, offset + count);
    return all.subspan(offset, count);
  }
  // Encodes an increment (f32 or f64) with error feedback.
  void encode_increment(const Key& key, ConstView data, core::Buffer& out) {
    auto& ef = feedback[key];
    if (!ef) ef = std::make_unique<compress::ErrorFeedback>(make(key, 0));
    if (data.dtype() == core::DType::f32) {
      ef->encode(0, data, out);
    } else {
      const std::vector<float> x = to_f32(data);
      ef->encode(0, ConstView(std::span<const float>(x)), out);
    }
    if (meter != nullptr) meter->add(data.numel() * sizeof(float), out.bytes());  // the codec's f32 input
  }
  // Encodes a state as its difference from the link's reference; owner: whose tensor the range is of.
  void encode_state(const Key& key, int owner, ConstView data, core::Buffer& out) {
    auto& sender = senders[key];
    if (!sender)
      sender = std::make_unique<compress::DeltaSender>(make(key, 1), std::get<2>(key),
                                                       start(owner, std::get<1>(key), std::get<2>(key)));
    sender->encode(data, out, meter);
  }
  // The reference of the states sent on a link (the receiver's reconstruction of the last one).
  std::span<const float> sent(const Key& key) const { return senders.at(key)->reference(); }
  // Decodes a state received on a link: returns the link's updated reference.
  std::span<const float> decode_state(const Key& key, int owner, ConstView payload) {
    auto& receiver = receivers[key];
    if (!receiver)
      receiver = std::make_unique<compress::DeltaReceiver>(make(key, 2), std::get<2>(key),
                                                           start(owner, std::get<1>(key), std::get<2>(key)));
    return receiver->decode(payload);
  }

  // Checkpoints (Window::save_links): every link's error feedback and references, with an index
  // ("<prefix>.links", then per link "<prefix>.link.<i>.kind|peer|offset|count" and the object's
  // own sections under "<prefix>.link.<i>"). restore replaces every link by the saved ones
  // (IoError naming `source` for a missing or malformed value; nothing changes then).
  void save(std::string_view prefix, core::SavedState& out) const;
  void restore(std::string_view prefix, const core::SavedState& in, std::string_view source);
};

}  // namespace fast::collective::detail
