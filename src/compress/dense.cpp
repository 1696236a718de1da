// Dense codecs: none (f32 copy), fp16, bf16. Body: n elements of 4, 2 or 2 bytes.

#include <cmath>
#include <cstring>

#include "codecs.hpp"
#include "fast/compress/half.hpp"
#include "wire.hpp"

namespace fast::compress {

namespace {

class NoneCodec final : public Codec {
 public:
  std::string_view name() const override { return "none"; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 4 * n; }
  bool lossless() const override { return true; }
  bool unbiased() const override { return true; }
  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    std::uint8_t* body = wire::begin_payload(out, encoded_bytes(input.numel()), CodecId::none, input.numel());
    if (input.numel() > 0) std::memcpy(body, input.data(), 4 * input.numel());
  }
  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), CodecId::none, payload, out);
    wire::check_length(name(), p.size(), encoded_bytes(out.numel()), "16-byte header + 4 n");
    if (out.numel() > 0) std::memcpy(out.data(), p.data() + kHeaderBytes, 4 * out.numel());
  }
};

// fp16 and bf16: one 16-bit word per element.
template <CodecId Id>
class HalfCodec final : public Codec {
 public:
  std::string_view name() const override { return Id == CodecId::fp16 ? "fp16" : "bf16"; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 2 * n; }
  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    std::uint8_t* body = wire::begin_payload(out, encoded_bytes(x.size()), Id, x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      std::uint16_t h;
      if constexpr (Id == CodecId::fp16) {
        h = f32_to_f16(x[i]);
        FAST_ENFORCE((h & 0x7fffu) != 0x7c00u || std::isinf(x[i]),
                     "codec 'fp16': element {} = {} overflows fp16 (largest finite 65504)", i, x[i]);
      } else {
        h = f32_to_bf16(x[i]);
      }
      wire::put<std::uint16_t>(body + 2 * i, h);
    }
  }
  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), Id, payload, out);
    wire::check_length(name(), p.size(), encoded_bytes(out.numel()), "16-byte header + 2 n");
    auto y = out.as<float>();
    const std::uint8_t* body = p.data() + kHeaderBytes;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const auto h = wire::get<std::uint16_t>(body + 2 * i);
      y[i] = Id == CodecId::fp16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  }
};

}  // namespace

std::unique_ptr<Codec> make_none() { return std::make_unique<NoneCodec>(); }
std::unique_ptr<Codec> make_fp16() { return std::make_unique<HalfCodec<CodecId::fp16>>(); }
std::unique_ptr<Codec> make_bf16() { return std::make_unique<HalfCodec<CodecId::bf16>>(); }

}  // namespace fast::compress
