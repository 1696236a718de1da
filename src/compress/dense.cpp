// Dense codecs: none (f32 copy), fp16, bf16. Body: n elements of 4, 2 or 2 bytes.

#include <bit>
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
    const float* xp = x.data();
    const std::size_t n = x.size();
    // Branch-free loop (vectorises); fp16 overflow is OR-reduced and located afterwards.
    std::uint32_t overflow = 0;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t h;
      if constexpr (Id == CodecId::fp16) {
        h = f32_to_f16(xp[i]);
        const std::uint32_t a = std::bit_cast<std::uint32_t>(xp[i]) & 0x7fffffffu;
        overflow |= static_cast<std::uint32_t>((h & 0x7fffu) == 0x7c00u) & static_cast<std::uint32_t>(a != 0x7f800000u);
      } else {
        h = f32_to_bf16(xp[i]);
      }
      std::memcpy(body + 2 * i, &h, 2);
    }
    if (overflow != 0)
      for (std::size_t i = 0; i < n; ++i)
        FAST_ENFORCE((f32_to_f16(xp[i]) & 0x7fffu) != 0x7c00u || std::isinf(xp[i]),
                     "codec 'fp16': element {} = {} overflows fp16 (largest finite 65504)", i, xp[i]);
  }
  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), Id, payload, out);
    wire::check_length(name(), p.size(), encoded_bytes(out.numel()), "16-byte header + 2 n");
    auto y = out.as<float>();
    const std::uint8_t* body = p.data() + kHeaderBytes;
    float* yp = y.data();
    for (std::size_t i = 0; i < y.size(); ++i) {
      std::uint16_t h;
      std::memcpy(&h, body + 2 * i, 2);
      yp[i] = Id == CodecId::fp16 ? f16_to_f32(h) : bf16_to_f32(h);
    }
  }
};

}  // namespace

std::unique_ptr<Codec> make_none() { return std::make_unique<NoneCodec>(); }
std::unique_ptr<Codec> make_fp16() { return std::make_unique<HalfCodec<CodecId::fp16>>(); }
std::unique_ptr<Codec> make_bf16() { return std::make_unique<HalfCodec<CodecId::bf16>>(); }

}  // namespace fast::compress
