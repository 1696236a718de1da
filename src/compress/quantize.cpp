// Quantizing codecs.
//   int8 (QSGD): body = f32 norm, u8 levels s, then n int8 levels l_i in [-s, s]; x_i ~ norm * l_i / s.
//   sign:        body = f32 scale (mean |x|), then ceil(n / 8) bytes of sign bits, bit i%8 (LSB first) of
//                byte i/8 set when x_i < 0; unused bits of the last byte are zero.

#include <cmath>
#include <algorithm>
#include <random>

#include "codecs.hpp"
#include "wire.hpp"

namespace fast::compress {

namespace {

class Int8Codec final : public Codec {
 public:
  Int8Codec(int levels, std::uint64_t seed) : levels_(levels), rng_(seed) {}
  std::string_view name() const override { return "int8"; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 5 + n; }
  bool unbiased() const override { return true; }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    double sq = 0;
    for (float v : x) sq += static_cast<double>(v) * v;
    const auto norm = static_cast<float>(std::sqrt(sq));
    FAST_ENFORCE(std::isfinite(norm), "codec 'int8': input norm {} is not finite", norm);
    std::uint8_t* body = wire::begin_payload(out, encoded_bytes(x.size()), CodecId::int8, x.size());
    wire::put<float>(body, norm);
    body[4] = static_cast<std::uint8_t>(levels_);
    const double s = levels_;
    for (std::size_t i = 0; i < x.size(); ++i) {
      int level = 0;
      if (norm > 0) {
        // r in [0, s]; level = floor(r) + Bernoulli(r - floor(r)), so E[level] = r.
        const double r = std::min(s, std::fabs(static_cast<double>(x[i])) / norm * s);
        const double fl = std::floor(r);
        const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
        level = static_cast<int>(fl) + (u < r - fl ? 1 : 0);
        if (x[i] < 0) level = -level;
      }
      body[5 + i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(level));
    }
  }

  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), CodecId::int8, payload, out);
    wire::check_length(name(), p.size(), encoded_bytes(out.numel()), "16-byte header + 5 + n");
    const std::uint8_t* body = p.data() + kHeaderBytes;
    const auto norm = wire::get<float>(body);
    const int s = body[4];
    FAST_ENFORCE(std::isfinite(norm) && norm >= 0, "codec 'int8': payload norm {}, expected finite and >= 0", norm);
    FAST_ENFORCE(s >= 1 && s <= 127, "codec 'int8': payload levels {}, expected 1..127", s);
    const std::size_t n = out.numel();
    for (std::size_t i = 0; i < n; ++i) {
      const int l = static_cast<std::int8_t>(body[5 + i]);
      FAST_ENFORCE(l >= -s && l <= s, "codec 'int8': level {} of element {} out of range, expected -{}..{}", l, i,
                   s, s);
    }
    auto y = out.as<float>();
    for (std::size_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(static_cast<double>(norm) * static_cast<std::int8_t>(body[5 + i]) / s);
  }

 private:
  int levels_;
  std::mt19937_64 rng_;
};

class SignCodec final : public Codec {
 public:
  std::string_view name() const override { return "sign"; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 4 + (n + 7) / 8; }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    double sum = 0;
    for (float v : x) sum += std::fabs(static_cast<double>(v));
    const auto scale = x.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(x.size()));
    FAST_ENFORCE(std::isfinite(scale), "codec 'sign': mean |x| = {} is not finite", scale);
    std::uint8_t* body = wire::begin_payload(out, encoded_bytes(x.size()), CodecId::sign, x.size());
    wire::put<float>(body, scale);
    std::uint8_t* bits = body + 4;  // a reused Buffer keeps old bytes: clear
    std::fill(bits, bits + (x.size() + 7) / 8, std::uint8_t{0});
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i] < 0) bits[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
  }

  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), CodecId::sign, payload, out);
    const std::size_t n = out.numel();
    wire::check_length(name(), p.size(), encoded_bytes(n), "16-byte header + 4 + ceil(n / 8)");
    const std::uint8_t* body = p.data() + kHeaderBytes;
    const auto scale = wire::get<float>(body);
    FAST_ENFORCE(std::isfinite(scale) && scale >= 0, "codec 'sign': payload scale {}, expected finite and >= 0",
                 scale);
    const std::uint8_t* bits = body + 4;
    if (n % 8 != 0) {
      const auto pad = static_cast<std::uint8_t>(bits[n / 8] >> (n % 8));
      FAST_ENFORCE(pad == 0, "codec 'sign': padding bits of the last byte are {:#x}, expected 0", pad);
    }
    auto y = out.as<float>();
    for (std::size_t i = 0; i < n; ++i) y[i] = (bits[i / 8] >> (i % 8)) & 1u ? -scale : scale;
  }
};

}  // namespace

std::unique_ptr<Codec> make_int8(int levels, std::uint64_t seed) { return std::make_unique<Int8Codec>(levels, seed); }
std::unique_ptr<Codec> make_sign() { return std::make_unique<SignCodec>(); }

}  // namespace fast::compress
