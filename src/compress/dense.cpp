// Dense codecs: none (f32 copy), fp16, bf16. Body: n elements of 4, 2 or 2 bytes.

#include <bit>
#include <cmath>
#include <cstring>

#include "codecs.hpp"
#include "fast/compress/half.hpp"
#include "fast/compress/pack.hpp"
#include "fast/core/cpu.hpp"
#include "wire.hpp"

namespace fast::compress {

namespace {

class NoneCodec final : public Codec {
 public:
  std::string_view name() const override { return "none"; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 4 * n; }
  bool lossless() const override { return true; }
  double consensus_step() const override { return 1.0; }
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

// The conversion loops: branch-free (they vectorise), compiled for the baseline and for AVX2 (chosen
// at run time from core::cpu_features, like core::all_finite). Encode returns non-zero when some
// finite element rounds to fp16 inf (|x| >= 65520); the caller locates it.
template <bool Fp16>
[[gnu::always_inline]] inline std::uint32_t half_encode(const float* xp, std::uint8_t* body, std::size_t n) noexcept {
  std::uint32_t overflow = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    if constexpr (Fp16) {
      h = f32_to_f16(xp[i]);
      const auto a = static_cast<std::int32_t>(std::bit_cast<std::uint32_t>(xp[i]) & 0x7fffffffu);
      overflow |= static_cast<std::uint32_t>(a >= 0x477ff000) & static_cast<std::uint32_t>(a < 0x7f800000);
    } else {
      h = f32_to_bf16(xp[i]);
    }
    std::memcpy(body + 2 * i, &h, 2);
  }
  return overflow;
}
template <bool Fp16>
[[gnu::always_inline]] inline void half_decode(const std::uint8_t* body, float* yp, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h;
    std::memcpy(&h, body + 2 * i, 2);
    yp[i] = Fp16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
}
std::uint32_t fp16_encode_base(const float* x, std::uint8_t* b, std::size_t n) { return half_encode<true>(x, b, n); }
std::uint32_t bf16_encode_base(const float* x, std::uint8_t* b, std::size_t n) { return half_encode<false>(x, b, n); }
void fp16_decode_base(const std::uint8_t* b, float* y, std::size_t n) { half_decode<true>(b, y, n); }
void bf16_decode_base(const std::uint8_t* b, float* y, std::size_t n) { half_decode<false>(b, y, n); }
FAST_TARGET_AVX2 std::uint32_t fp16_encode_avx2(const float* x, std::uint8_t* b, std::size_t n) {
  return half_encode<true>(x, b, n);
}
FAST_TARGET_AVX2 std::uint32_t bf16_encode_avx2(const float* x, std::uint8_t* b, std::size_t n) {
  return half_encode<false>(x, b, n);
}
FAST_TARGET_AVX2 void fp16_decode_avx2(const std::uint8_t* b, float* y, std::size_t n) { half_decode<true>(b, y, n); }
FAST_TARGET_AVX2 void bf16_decode_avx2(const std::uint8_t* b, float* y, std::size_t n) { half_decode<false>(b, y, n); }

// fp16 and bf16: one 16-bit word per element.
template <CodecId Id>
class HalfCodec final : public Codec {
 public:
  std::string_view name() const override { return Id == CodecId::fp16 ? "fp16" : "bf16"; }
  bool elementwise() const override { return true; }
  double consensus_step() const override { return 1.0; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 2 * n; }
  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    std::uint8_t* body = wire::begin_payload(out, encoded_bytes(x.size()), Id, x.size());
    const float* xp = x.data();
    const std::size_t n = x.size();
    const bool avx2 = core::cpu_features().avx2;
    const std::uint32_t overflow = Id == CodecId::fp16
                                       ? (avx2 ? fp16_encode_avx2(xp, body, n) : fp16_encode_base(xp, body, n))
                                       : (avx2 ? bf16_encode_avx2(xp, body, n) : bf16_encode_base(xp, body, n));
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
    const bool avx2 = core::cpu_features().avx2;
    if constexpr (Id == CodecId::fp16)
      avx2 ? fp16_decode_avx2(body, yp, y.size()) : fp16_decode_base(body, yp, y.size());
    else
      avx2 ? bf16_decode_avx2(body, yp, y.size()) : bf16_decode_base(body, yp, y.size());
  }
};

}  // namespace

std::unique_ptr<Codec> make_none() { return std::make_unique<NoneCodec>(); }
std::unique_ptr<Codec> make_fp16() { return std::make_unique<HalfCodec<CodecId::fp16>>(); }
std::unique_ptr<Codec> make_bf16() { return std::make_unique<HalfCodec<CodecId::bf16>>(); }

void pack_halves(CodecId id, std::span<const std::uint16_t> words, core::Buffer& out) {
  FAST_ENFORCE(id == CodecId::fp16 || id == CodecId::bf16, "pack_halves: codec id {}; expected fp16 or bf16",
               static_cast<int>(id));
  std::uint8_t* body = wire::begin_payload(out, kHeaderBytes + 2 * words.size(), id, words.size());
  if (!words.empty()) std::memcpy(body, words.data(), 2 * words.size());
}

}  // namespace fast::compress
