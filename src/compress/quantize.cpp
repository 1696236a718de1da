// Quantizing codecs.
//   int8 (QSGD with buckets): body = u8 levels s, u32 bucket B, the f32 norm of each of the ceil(n / B)
//                buckets of B consecutive elements (the last may be shorter), then n int8 levels l_i in
//                [-s, s]; x_i ~ norm_b * l_i / s with b = i / B.
//                The rounding draws come from a counter-based hash (uniform24) keyed by one 64-bit draw of
//                the codec's mt19937_64 stream per message.
//   sign:        body = f32 scale (mean |x|), then ceil(n / 8) bytes of sign bits, bit i%8 (LSB first) of
//                byte i/8 set when x_i < 0; unused bits of the last byte are zero.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>

#include "codecs.hpp"
#include "fast/compress/pack.hpp"
#include "fast/core/cpu.hpp"
#include "wire.hpp"

namespace fast::compress {

namespace {

// Sum of f(x_i) in double with 8 independent accumulators (a fixed order; vectorisable).
template <typename F>
double sum_of(std::span<const float> x, F f) {
  double acc[8] = {};
  const std::size_t n8 = x.size() / 8 * 8;
  for (std::size_t i = 0; i < n8; i += 8)
    for (std::size_t l = 0; l < 8; ++l) acc[l] += f(static_cast<double>(x[i + l]));
  for (std::size_t i = n8; i < x.size(); ++i) acc[i % 8] += f(static_cast<double>(x[i]));
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Counter-based uniform draw in [0, 1) with 24 bits: murmur3's fmix32 of a Weyl sequence in i, keyed per
// message. Stateless per element, so the quantisation loop has no dependency chain and vectorises.
inline float uniform24(std::uint32_t key, std::uint32_t i) noexcept {
  std::uint32_t h = i * 0x9e3779b9u + key;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return static_cast<float>(h >> 8) * 0x1.0p-24f;
}

// Levels of x[begin, end): r in [0, s]; level = floor(r) + Bernoulli(r - floor(r)), so E[level] = r.
// Branch-free; compiled for the baseline and for AVX2 (chosen at run time from core::cpu_features).
[[gnu::always_inline]] inline void quantize(const float* xp, std::int8_t* lp, std::size_t begin, std::size_t end,
                                            float s, float inv, std::uint32_t key) noexcept {
  for (std::size_t i = begin; i < end; ++i) {
    const float r = std::min(s, std::fabs(xp[i]) * inv);
    const auto fl = static_cast<std::int32_t>(r);  // r >= 0: truncation is floor
    const std::int32_t up = uniform24(key, static_cast<std::uint32_t>(i)) < r - static_cast<float>(fl);
    const std::int32_t level = fl + up;
    lp[i] = static_cast<std::int8_t>(xp[i] < 0 ? -level : level);
  }
}
void quantize_base(const float* x, std::int8_t* l, std::size_t b, std::size_t e, float s, float inv, std::uint32_t k) {
  quantize(x, l, b, e, s, inv, k);
}
FAST_TARGET_AVX2 void quantize_avx2(const float* x, std::int8_t* l, std::size_t b, std::size_t e, float s, float inv,
                                    std::uint32_t k) {
  quantize(x, l, b, e, s, inv, k);
}

class Int8Codec final : public Codec {
 public:
  Int8Codec(int levels, std::uint64_t bucket, std::uint64_t seed) : levels_(levels), bucket_(bucket), rng_(seed) {}
  std::string_view name() const override { return "int8"; }
  double consensus_step() const override { return 0.8; }
  std::size_t encoded_bytes(std::size_t n) const override { return encoded_bytes(n, bucket_); }
  bool unbiased() const override { return true; }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    const std::size_t n = x.size();
    const std::size_t buckets = bucket_count(n, bucket_);
    std::uint8_t* body = wire::begin_payload(out, encoded_bytes(n), CodecId::int8, n);
    body[0] = static_cast<std::uint8_t>(levels_);
    wire::put<std::uint32_t>(body + 1, static_cast<std::uint32_t>(bucket_));
    std::uint8_t* norms = body + 5;
    // Every norm first: a non-finite input is refused before any level is drawn.
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::size_t first = b * bucket_, count = std::min<std::size_t>(bucket_, n - first);
      const auto norm = static_cast<float>(std::sqrt(sum_of(x.subspan(first, count), [](double v) { return v * v; })));
      FAST_ENFORCE(std::isfinite(norm), "codec 'int8': input norm {} of elements {}..{} is not finite", norm, first,
                   first + count - 1);
      wire::put<float>(norms + 4 * b, norm);
    }
    // Per message: a 64-bit draw of the codec's stream; element i uses the key and i (the high half of i
    // is folded in, so n >= 2^32 gets distinct draws).
    const std::uint64_t draw = rng_();
    const auto s = static_cast<float>(levels_);
    std::int8_t* lp = reinterpret_cast<std::int8_t*>(norms + 4 * buckets);
    const auto quantize_range = core::cpu_features().avx2 ? quantize_avx2 : quantize_base;
    for (std::size_t b = 0; b < buckets; ++b) {
      const auto norm = wire::get<float>(norms + 4 * b);
      const float inv = norm > 0 ? static_cast<float>(levels_ / static_cast<double>(norm)) : 0.0f;
      const std::size_t first = b * bucket_, last = first + std::min<std::size_t>(bucket_, n - first);
      for (std::size_t begin = first; begin < last;) {  // split where i >> 32 changes
        const std::size_t end = std::min(last, (begin >> 32 << 32) + (std::size_t{1} << 32));
        const auto key = static_cast<std::uint32_t>(draw ^ (draw >> 32) ^ (begin >> 32) * 0x632be5abu);
        quantize_range(x.data(), lp, begin, end, s, inv, key);
        begin = end;
      }
    }
  }

  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), CodecId::int8, payload, out);
    const std::size_t n = out.numel();
    FAST_ENFORCE(p.size() >= kHeaderBytes + 5, "codec 'int8': payload of {} bytes, expected at least {}", p.size(),
                 kHeaderBytes + 5);
    const std::uint8_t* body = p.data() + kHeaderBytes;
    const int s = body[0];
    const std::uint32_t bucket = wire::get<std::uint32_t>(body + 1);
    FAST_ENFORCE(s >= 1 && s <= 127, "codec 'int8': payload levels {}, expected 1..127", s);
    FAST_ENFORCE(bucket >= 1, "codec 'int8': payload bucket 0, expected >= 1");
    wire::check_length(name(), p.size(), encoded_bytes(n, bucket), "16-byte header + 5 + 4 per bucket + n");
    const std::size_t buckets = bucket_count(n, bucket);
    const std::uint8_t* norms = body + 5;
    for (std::size_t b = 0; b < buckets; ++b) {
      const auto norm = wire::get<float>(norms + 4 * b);
      FAST_ENFORCE(std::isfinite(norm) && norm >= 0,
                   "codec 'int8': payload norm {} of bucket {}, expected finite and >= 0", norm, b);
    }
    const auto* lp = reinterpret_cast<const std::int8_t*>(norms + 4 * buckets);
    std::int32_t bad = 0;
    for (std::size_t i = 0; i < n; ++i)
      bad |= static_cast<std::int32_t>(lp[i] < -s) | static_cast<std::int32_t>(lp[i] > s);
    if (bad != 0)
      for (std::size_t i = 0; i < n; ++i)
        FAST_ENFORCE(lp[i] >= -s && lp[i] <= s, "codec 'int8': level {} of element {} out of range, expected -{}..{}",
                     static_cast<int>(lp[i]), i, s, s);
    float* y = out.as<float>().data();
    for (std::size_t b = 0; b < buckets; ++b) {
      const auto step = static_cast<float>(static_cast<double>(wire::get<float>(norms + 4 * b)) / s);
      const std::size_t first = b * bucket, last = first + std::min<std::size_t>(bucket, n - first);
      for (std::size_t i = first; i < last; ++i) y[i] = static_cast<float>(lp[i]) * step;
    }
  }

  void save_state(std::string_view prefix, core::SavedState& out) const override { rng_.save(prefix, out); }
  void restore_state(std::string_view prefix, const core::SavedState& in, std::string_view source) override {
    rng_.restore(prefix, in, source);
  }

 private:
  static std::size_t bucket_count(std::size_t n, std::size_t bucket) noexcept { return (n + bucket - 1) / bucket; }
  static std::size_t encoded_bytes(std::size_t n, std::size_t bucket) noexcept {
    return kHeaderBytes + 5 + 4 * bucket_count(n, bucket) + n;
  }

  int levels_;
  std::uint64_t bucket_;  // elements per norm, in [1, 2^32)
  CountedStream rng_;
};

// Resizes out to a sign payload of n elements, writes the header and the scale; returns the bits.
std::uint8_t* begin_sign_payload(std::size_t n, float scale, core::Buffer& out) {
  std::uint8_t* body = wire::begin_payload(out, kHeaderBytes + 4 + (n + 7) / 8, CodecId::sign, n);
  wire::put<float>(body, scale);
  return body + 4;
}

class SignCodec final : public Codec {
 public:
  std::string_view name() const override { return "sign"; }
  double consensus_step() const override { return 0.4; }
  std::size_t encoded_bytes(std::size_t n) const override { return kHeaderBytes + 4 + (n + 7) / 8; }

  void encode(core::ConstView input, core::Buffer& out) override {
    wire::check_input(name(), input);
    auto x = input.as<float>();
    const double sum = sum_of(x, [](double v) { return std::fabs(v); });
    const auto scale = x.empty() ? 0.0f : static_cast<float>(sum / static_cast<double>(x.size()));
    FAST_ENFORCE(std::isfinite(scale), "codec 'sign': mean |x| = {} is not finite", scale);
    std::uint8_t* bits = begin_sign_payload(x.size(), scale, out);
    const float* xp = x.data();
    const std::size_t n = x.size(), n8 = n / 8;
    for (std::size_t j = 0; j < n8; ++j) {
      unsigned b = 0;
      for (unsigned l = 0; l < 8; ++l) b |= static_cast<unsigned>(xp[8 * j + l] < 0) << l;
      bits[j] = static_cast<std::uint8_t>(b);
    }
    if (n8 * 8 < n) {
      unsigned b = 0;
      for (std::size_t i = n8 * 8; i < n; ++i) b |= static_cast<unsigned>(xp[i] < 0) << (i % 8);
      bits[n8] = static_cast<std::uint8_t>(b);
    }
  }

  void decode(core::ConstView payload, core::MutableView out) const override {
    auto p = wire::check_header(name(), CodecId::sign, payload, out);
    const std::size_t n = out.numel();
    wire::check_length(name(), p.size(), encoded_bytes(n), "16-byte header + 4 + ceil(n / 8)");
    const std::uint8_t* body = p.data() + kHeaderBytes;
    const auto scale = wire::get<float>(body);
    FAST_ENFORCE(std::isfinite(scale) && scale >= 0, "codec 'sign': payload scale {}, expected finite and >= 0", scale);
    const std::uint8_t* bits = body + 4;
    if (n % 8 != 0) {
      const auto pad = static_cast<std::uint8_t>(bits[n / 8] >> (n % 8));
      FAST_ENFORCE(pad == 0, "codec 'sign': padding bits of the last byte are {:#x}, expected 0", pad);
    }
    // +scale with the sign bit set from the payload bit: branch-free.
    const std::uint32_t sbits = std::bit_cast<std::uint32_t>(scale);
    float* y = out.as<float>().data();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t neg = (static_cast<std::uint32_t>(bits[i / 8]) >> (i % 8)) & 1u;
      y[i] = std::bit_cast<float>(sbits | (neg << 31));
    }
  }
};

}  // namespace

std::unique_ptr<Codec> make_int8(int levels, std::uint64_t bucket, std::uint64_t seed) {
  return std::make_unique<Int8Codec>(levels, bucket, seed);
}
std::unique_ptr<Codec> make_sign() { return std::make_unique<SignCodec>(); }

void pack_sign(std::size_t n, float scale, std::span<const std::uint8_t> bits, core::Buffer& out) {
  FAST_ENFORCE(std::isfinite(scale) && scale >= 0, "codec 'sign': scale {}; expected mean |x|, finite and >= 0", scale);
  FAST_ENFORCE(bits.size() == (n + 7) / 8, "codec 'sign': {} bit bytes for n = {}; expected ceil(n / 8) = {}",
               bits.size(), n, (n + 7) / 8);
  if (n % 8 != 0)
    FAST_ENFORCE((bits.back() >> (n % 8)) == 0, "codec 'sign': padding bits of the last byte are {:#x}, expected 0",
                 bits.back() >> (n % 8));
  std::uint8_t* dst = begin_sign_payload(n, scale, out);
  if (!bits.empty()) std::memcpy(dst, bits.data(), bits.size());
}

}  // namespace fast::compress
