#pragma once
// DeviceEncoder: a codec's encode computed where the tensor lives (a GPU, or the CPU), so that only
// the encoded bytes cross to the host (docs/gpu.md). fp16 and bf16 convert on the device, sign
// takes its mean |x| and packs its bits there, topk selects its k largest |x_i| (ties to the lower
// index) there and brings back k values and k indices. The payload is then written by
// compress::pack_* (fast/compress/pack.hpp): byte for byte what compress::make_codec(spec)'s encode
// writes for the same values, so every decoder of FAST reads it (tests/adapters/torch/device_codec_test.cpp
// checks it on the CPU; NaN, which the codecs pass through or refuse, may differ in its payload bits
// on a GPU).
//
// Ownership: holds no tensor between calls. Thread-safety: one DeviceEncoder per thread. Failure:
// InvalidArgument as the codec's own encode (fp16 overflow, non-finite topk input), naming the
// element, before `out` is touched.

#include <string>
#include <string_view>
#include <vector>

#include <torch/types.h>

#include "fast/compress/codec.hpp"
#include "fast/core/buffer.hpp"

namespace fast::torch {

class DeviceEncoder {
 public:
  // spec: fp16, bf16, sign or topk[:ratio=r] (global selection), as compress::make_codec reads them;
  // InvalidArgument for a malformed spec (make_codec's message) or another codec (listing these).
  explicit DeviceEncoder(std::string_view spec);
  // The specs accepted, for messages and help.
  static std::vector<std::string> supported();

  // x: f32, one dimension, contiguous, on any device. out: the payload (host memory).
  void encode(const ::torch::Tensor& x, core::Buffer& out) const;
  // topk: the keep ratio for later encodes (r in (0, 1]); false for the other codecs.
  bool set_keep_ratio(double r);
  std::string_view name() const noexcept;

 private:
  void encode_half(const ::torch::Tensor& x, core::Buffer& out) const;
  void encode_sign(const ::torch::Tensor& x, core::Buffer& out) const;
  void encode_topk(const ::torch::Tensor& x, core::Buffer& out) const;

  compress::CodecId id_;
  double ratio_ = 0;  // topk
};

}  // namespace fast::torch
