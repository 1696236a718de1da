#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/compress/half.hpp"
#include "fast/core/error.hpp"

namespace fast::compress {
namespace {

std::vector<float> random_values(std::size_t n, std::uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> x(n);
  for (auto& v : x) v = d(g);
  return x;
}

std::vector<std::uint8_t> encode(Codec& c, const std::vector<float>& x) {
  core::Buffer out;
  c.encode(std::span<const float>(x), out);
  EXPECT_EQ(out.dtype(), core::DType::u8);
  auto b = out.as<std::uint8_t>();
  return {b.begin(), b.end()};
}

std::vector<float> decode(const Codec& c, const std::vector<std::uint8_t>& payload, std::size_t n) {
  std::vector<float> y(n, 42.0f);
  c.decode(std::span<const std::uint8_t>(payload), std::span<float>(y));
  return y;
}

// Decoding `payload` into n elements throws InvalidArgument whose message names the codec and contains
// `what`, and leaves the output untouched.
void expect_rejected(const Codec& c, const std::vector<std::uint8_t>& payload, std::size_t n, const std::string& what) {
  std::vector<float> y(n, 42.0f);
  try {
    c.decode(std::span<const std::uint8_t>(payload), std::span<float>(y));
    ADD_FAILURE() << c.name() << ": accepted a payload that should fail with '" << what << "'";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::string(c.name())), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
  for (float v : y) ASSERT_EQ(v, 42.0f) << c.name() << ": output changed by a rejected payload";
}

// --- conversions -------------------------------------------------------------------------------

TEST(Half, KnownFp16Encodings) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                   // halfway to 2^16: ties to even = inf
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);      // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);      // halfway to 0: ties to even
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);      // 1.5 ulp: ties to even
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);      // smallest normal
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);       // tie, even below
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);   // tie, even above
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
}

TEST(Half, EveryFp16AndBf16ValueRoundTripsExactly) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    if (((b >> 10) & 0x1f) != 0x1f || (b & 0x3ff) == 0) {
      ASSERT_EQ(f32_to_f16(f16_to_f32(b)), b) << h;
    }
    const float bf = bf16_to_f32(b);
    if (!std::isnan(bf)) {
      ASSERT_EQ(f32_to_bf16(bf), b) << h;
    }
  }
}

TEST(Half, KnownBf16Encodings) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie, even below
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, even above
  EXPECT_EQ(f32_to_bf16(-1.0f - std::ldexp(1.0f, -8) - std::ldexp(1.0f, -20)), 0xbf81);  // above the tie
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}

// --- dense codecs ------------------------------------------------------------------------------

TEST(Codec, NoneIsExact) {
  auto c = make_codec("none");
  const auto x = random_values(1001, 1);
  const auto p = encode(*c, x);
  EXPECT_EQ(p.size(), c->encoded_bytes(x.size()));
  EXPECT_EQ(decode(*c, p, x.size()), x);
  EXPECT_TRUE(c->lossless());
}

TEST(Codec, Fp16RelativeErrorAtMostTwoToMinus11) {
  auto c = make_codec("fp16");
  auto x = random_values(5000, 2, -60000.0f, 60000.0f);
  const auto small = random_values(2000, 3, -1e-3f, 1e-3f);
  x.insert(x.end(), small.begin(), small.end());
  const auto p = encode(*c, x);
  EXPECT_EQ(p.size(), c->encoded_bytes(x.size()));
  EXPECT_EQ(p.size(), 16 + 2 * x.size());
  const auto y = decode(*c, p, x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::fabs(x[i]) >= std::ldexp(1.0f, -14))
      ASSERT_LE(std::fabs(y[i] - x[i]), std::ldexp(std::fabs(x[i]), -11)) << i;
    else
      ASSERT_LE(std::fabs(y[i] - x[i]), std::ldexp(1.0f, -25)) << i;
  }
}

TEST(Codec, Fp16OverflowIsRejectedAtEncode) {
  auto c = make_codec("fp16");
  core::Buffer out;
  const std::vector<float> x{1.0f, 70000.0f};
  EXPECT_THROW(c->encode(std::span<const float>(x), out), InvalidArgument);
}

TEST(Codec, Bf16RelativeErrorAtMostTwoToMinus8) {
  auto c = make_codec("bf16");
  auto x = random_values(5000, 4, -1e30f, 1e30f);
  const auto small = random_values(2000, 5, -1e-30f, 1e-30f);
  x.insert(x.end(), small.begin(), small.end());
  const auto y = decode(*c, encode(*c, x), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_LE(std::fabs(y[i] - x[i]), std::ldexp(std::fabs(x[i]), -8)) << i;
}

// --- quantizers --------------------------------------------------------------------------------

TEST(Codec, Int8DecodesToANeighbouringLevelOfTheNorm) {
  auto c = make_codec("int8:levels=7", 11);
  const auto x = random_values(300, 6);
  const auto p = encode(*c, x);
  EXPECT_EQ(p.size(), c->encoded_bytes(x.size()));
  double sq = 0;
  for (float v : x) sq += double(v) * v;
  const double norm = std::sqrt(sq);
  const auto y = decode(*c, p, x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double l = y[i] / norm * 7;
    EXPECT_NEAR(l, std::round(l), 1e-4) << i;
    EXPECT_LE(std::fabs(y[i] - x[i]), norm / 7 * (1 + 1e-6)) << i;
    EXPECT_TRUE(y[i] == 0 || (y[i] > 0) == (x[i] > 0)) << i;
  }
}

// QSGD: decode x_i = norm l_i / s with E[l_i] = |x_i| s / norm, so per element
// Var = (norm / s)^2 p (1 - p) <= (norm / s)^2 / 4; the mean of T decodes has sigma <= norm / (2 s sqrt T).
TEST(Codec, Int8IsUnbiasedMeanOf10kWithin3Sigma) {
  const int s = 4;
  const int trials = 10000;
  auto c = make_codec("int8:levels=4", 2024);
  const auto x = random_values(16, 7);
  double sq = 0;
  for (float v : x) sq += double(v) * v;
  const double sigma = std::sqrt(sq) / (2.0 * s * std::sqrt(double(trials)));
  std::vector<double> mean(x.size(), 0.0);
  for (int t = 0; t < trials; ++t) {
    const auto y = decode(*c, encode(*c, x), x.size());
    for (std::size_t i = 0; i < x.size(); ++i) mean[i] += y[i] / double(trials);
  }
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(mean[i] - x[i]), 3 * sigma) << i;
  EXPECT_TRUE(c->unbiased());
}

TEST(Codec, Int8SameSeedSameMessages) {
  auto a = make_codec("int8", 5);
  auto b = make_codec("int8", 5);
  const auto x = random_values(100, 8);
  EXPECT_EQ(encode(*a, x), encode(*b, x));
  std::vector<float> zeros(10, 0.0f);
  EXPECT_EQ(decode(*a, encode(*a, zeros), zeros.size()), zeros);
}

TEST(Codec, SignDecodesSignTimesMeanAbs) {
  auto c = make_codec("sign");
  const auto x = random_values(1003, 9);
  const auto p = encode(*c, x);
  EXPECT_EQ(p.size(), c->encoded_bytes(x.size()));
  EXPECT_EQ(p.size(), 16 + 4 + 126u);
  double sum = 0;
  for (float v : x) sum += std::fabs(double(v));
  const auto scale = static_cast<float>(sum / double(x.size()));
  const auto y = decode(*c, p, x.size());
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] < 0 ? -scale : scale) << i;
}

// --- sparsifiers -------------------------------------------------------------------------------

void expect_topk(const std::vector<float>& x, const std::vector<float>& y, std::size_t k) {
  std::size_t kept = 0;
  float min_kept = INFINITY, max_dropped = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (y[i] != 0) {
      ++kept;
      ASSERT_EQ(y[i], x[i]) << i;
      min_kept = std::min(min_kept, std::fabs(x[i]));
    } else {
      max_dropped = std::max(max_dropped, std::fabs(x[i]));
    }
  }
  EXPECT_EQ(kept, k);
  EXPECT_GE(min_kept, max_dropped);
}

TEST(Codec, TopkKeepsExactlyTheKLargestMagnitudes) {
  const auto x = random_values(1000, 10);  // distinct non-zero values
  auto byk = make_codec("topk:k=37");
  const auto p = encode(*byk, x);
  EXPECT_EQ(p.size(), byk->encoded_bytes(x.size()));
  EXPECT_EQ(p.size(), 16 + 8 + 8 * 37u);
  expect_topk(x, decode(*byk, p, x.size()), 37);
  auto byratio = make_codec("topk:ratio=0.0101");  // ceil(10.1) = 11
  expect_topk(x, decode(*byratio, encode(*byratio, x), x.size()), 11);
  auto all = make_codec("topk:k=5000");  // clamped to n
  EXPECT_EQ(decode(*all, encode(*all, x), x.size()), x);
}

TEST(Codec, TopkBreaksTiesByLowerIndex) {
  auto c = make_codec("topk:k=3");
  const std::vector<float> x{1, -2, 2, 1, -2, 2, 0.5};
  const std::vector<float> expected{0, -2, 2, 0, -2, 0, 0};
  EXPECT_EQ(decode(*c, encode(*c, x), x.size()), expected);
}

TEST(Codec, TopkRejectsNonFiniteInput) {
  auto c = make_codec("topk:k=1");
  core::Buffer out;
  const std::vector<float> x{1.0f, NAN};
  EXPECT_THROW(c->encode(std::span<const float>(x), out), InvalidArgument);
}

TEST(Codec, RandkSendsKValuesAtSeededIndices) {
  auto c = make_codec("randk:k=50", 3);
  auto other = make_codec("randk:k=50", 99);  // the receiver needs no shared state: the seed travels
  const auto x = random_values(400, 11);
  const auto p1 = encode(*c, x);
  const auto p2 = encode(*c, x);
  EXPECT_EQ(p1.size(), c->encoded_bytes(x.size()));
  EXPECT_EQ(p1.size(), 16 + 16 + 4 * 50u);
  std::set<std::size_t> s1, s2;
  const auto y1 = decode(*other, p1, x.size());
  const auto y2 = decode(*other, p2, x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (y1[i] != 0) { ASSERT_EQ(y1[i], x[i]); s1.insert(i); }
    if (y2[i] != 0) { ASSERT_EQ(y2[i], x[i]); s2.insert(i); }
  }
  EXPECT_EQ(s1.size(), 50u);
  EXPECT_EQ(s2.size(), 50u);
  EXPECT_NE(s1, s2);  // a fresh draw per message
}

TEST(Codec, RandkIndicesAreUniform) {
  // Each index is kept with probability k / n: over T messages the count is Binomial(T, k/n).
  const std::size_t n = 20, k = 5;
  const int trials = 4000;
  auto c = make_codec("randk:k=5", 17);
  const std::vector<float> x(n, 1.0f);
  std::vector<int> count(n, 0);
  for (int t = 0; t < trials; ++t) {
    const auto y = decode(*c, encode(*c, x), n);
    for (std::size_t i = 0; i < n; ++i) count[i] += y[i] != 0;
  }
  const double p = double(k) / n, mu = trials * p, sigma = std::sqrt(trials * p * (1 - p));
  for (std::size_t i = 0; i < n; ++i) EXPECT_LE(std::fabs(count[i] - mu), 4 * sigma) << i;
}

TEST(Codec, ThresholdKeepsMagnitudesAtOrAboveTheValue) {
  auto c = make_codec("threshold:value=2.5");
  const auto x = random_values(500, 12);
  const auto p = encode(*c, x);
  EXPECT_FALSE(c->fixed_size());
  EXPECT_LE(p.size(), c->encoded_bytes(x.size()));
  const auto y = decode(*c, p, x.size());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(y[i], std::fabs(x[i]) >= 2.5f ? x[i] : 0.0f) << i;
    kept += y[i] != 0;
  }
  EXPECT_EQ(p.size(), 16 + 8 + 8 * kept);
}

TEST(Codec, EmptyInputRoundTripsForEveryCodec) {
  for (const auto& name : codec_names()) {
    auto c = make_codec(name == "threshold" ? "threshold:value=1" : name);
    const std::vector<float> x;
    const auto p = encode(*c, x);
    EXPECT_EQ(p.size(), c->encoded_bytes(0)) << name;
    EXPECT_TRUE(decode(*c, p, 0).empty());
  }
}

// --- malformed payloads ------------------------------------------------------------------------

const char* const kSpecs[] = {"none", "fp16", "bf16", "int8", "sign", "topk:k=4", "randk:k=4", "threshold:value=0.5"};

TEST(CodecMalformed, HeaderDefectsAreRejectedForEveryCodec) {
  const auto x = random_values(21, 13);
  for (const char* spec : kSpecs) {
    SCOPED_TRACE(spec);
    auto c = make_codec(spec);
    const auto good = encode(*c, x);
    EXPECT_EQ(decode(*c, good, x.size()).size(), x.size());
    expect_rejected(*c, {}, x.size(), "truncated");
    expect_rejected(*c, {good.begin(), good.begin() + 10}, x.size(), "truncated");
    expect_rejected(*c, {good.begin(), good.end() - 1}, x.size(), "truncated");
    auto longer = good;
    longer.push_back(0);
    expect_rejected(*c, longer, x.size(), "wrong-length");
    auto magic = good;
    magic[0] = 'X';
    expect_rejected(*c, magic, x.size(), "bad magic");
    auto id = good;
    id[4] ^= 0x40;
    expect_rejected(*c, id, x.size(), "codec id");
    auto version = good;
    version[5] = 9;
    expect_rejected(*c, version, x.size(), "version");
    expect_rejected(*c, good, x.size() + 1, "n = 21");  // wrong n for the output
  }
}

void put_u32(std::vector<std::uint8_t>& p, std::size_t at, std::uint32_t v) { std::memcpy(p.data() + at, &v, 4); }
void put_u64(std::vector<std::uint8_t>& p, std::size_t at, std::uint64_t v) { std::memcpy(p.data() + at, &v, 8); }

TEST(CodecMalformed, SparseBodyDefectsAreRejected) {
  const auto x = random_values(10, 14);
  for (const char* spec : {"topk:k=4", "threshold:value=0"}) {
    SCOPED_TRACE(spec);
    auto c = make_codec(spec);
    const auto good = encode(*c, x);
    const std::size_t k = (good.size() - 24) / 8;
    auto big_k = good;
    put_u64(big_k, 16, 11);
    expect_rejected(*c, big_k, x.size(), "k = 11 exceeds n = 10");
    auto huge_k = good;
    put_u64(huge_k, 16, ~0ull);  // would overflow a naive size computation
    expect_rejected(*c, huge_k, x.size(), "exceeds n");
    auto other_k = good;
    put_u64(other_k, 16, k - 1);
    expect_rejected(*c, other_k, x.size(), "wrong-length");
    auto out_of_range = good;
    put_u32(out_of_range, 24 + 4 * (k - 1), 10);
    expect_rejected(*c, out_of_range, x.size(), "out of range");
    auto repeated = good;
    put_u32(repeated, 28, 0);
    put_u32(repeated, 24, 0);
    expect_rejected(*c, repeated, x.size(), "not above the previous index");
  }
  auto r = make_codec("randk:k=4");
  const auto good = encode(*r, x);
  auto big_k = good;
  put_u64(big_k, 16, 11);
  expect_rejected(*r, big_k, x.size(), "k = 11 exceeds n = 10");
  auto other_k = good;
  put_u64(other_k, 16, 3);
  expect_rejected(*r, other_k, x.size(), "wrong-length");
}

TEST(CodecMalformed, QuantizerBodyDefectsAreRejected) {
  const auto x = random_values(10, 15);
  auto q = make_codec("int8:levels=3");
  const auto good = encode(*q, x);
  auto level = good;
  level[21 + 2] = 4;  // |level| > s = 3
  expect_rejected(*q, level, x.size(), "out of range");
  auto levels = good;
  levels[20] = 0;
  expect_rejected(*q, levels, x.size(), "levels 0");
  auto norm = good;
  const float nan = NAN;
  std::memcpy(norm.data() + 16, &nan, 4);
  expect_rejected(*q, norm, x.size(), "norm");

  auto s = make_codec("sign");
  const auto sg = encode(*s, x);  // 10 bits: 6 padding bits in the second byte
  auto pad = sg;
  pad[21] |= 0x80;
  expect_rejected(*s, pad, x.size(), "padding");
  auto scale = sg;
  const float neg = -1.0f;
  std::memcpy(scale.data() + 16, &neg, 4);
  expect_rejected(*s, scale, x.size(), "scale");
}

TEST(CodecMalformed, WrongDtypesAreRejected) {
  auto c = make_codec("none");
  core::Buffer out;
  const std::vector<double> d(3, 1.0);
  EXPECT_THROW(c->encode(std::span<const double>(d), out), InvalidArgument);
  const std::vector<float> x(3, 1.0f);
  c->encode(std::span<const float>(x), out);
  std::vector<double> y(3, 42.0);
  EXPECT_THROW(c->decode(out.view(), std::span<double>(y)), InvalidArgument);
  EXPECT_EQ(y, std::vector<double>(3, 42.0));
}

}  // namespace
}  // namespace fast::compress
