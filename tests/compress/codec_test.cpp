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
#include "payloads.hpp"

namespace fast::compress {
namespace {

using namespace payloads;

std::vector<float> random_values(std::size_t n, std::uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> x(n);
  for (auto& v : x) v = d(g);
  return x;
}

// --- conversions -------------------------------------------------------------------------------

TEST(Half, KnownFp16Encodings) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                          // halfway to 2^16: ties to even = inf
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);             // halfway to 0: ties to even
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 ulp: ties to even
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);             // smallest normal
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie, even below
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie, even above
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

// An independent reference: round |x| / ulp to nearest even in double (exact: a power-of-two scaling).
std::uint16_t reference_f16(float x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(double(x));
  if (std::isnan(x)) return 0;  // not compared
  if (a >= 65520.0) return sign | 0x7c00;
  if (a == 0) return sign;
  const int e = std::max(std::ilogb(a), -14);
  const double q = std::nearbyint(std::ldexp(a, 10 - e));  // in [0, 2048]
  const auto qi = static_cast<std::uint32_t>(q);
  if (e == -14 && qi < 1024) return static_cast<std::uint16_t>(sign | qi);  // subnormal (or rounds to 0)
  return static_cast<std::uint16_t>(sign | (((e + 15) << 10) + (qi - 1024)));
}

TEST(Half, Fp16MatchesAnIndependentRoundingOnAMillionBitPatterns) {
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 4093) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(u));
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(f16_to_f32(f32_to_f16(x))));
      continue;
    }
    ASSERT_EQ(f32_to_f16(x), reference_f16(x)) << std::hex << u;
  }
}

TEST(Half, KnownBf16Encodings) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);                           // tie, even below
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);                       // tie, even above
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

// Each element decodes to a level of its bucket's norm next to its value: 300 elements in buckets
// of 64 (the last one 44), and in one bucket (the default 512 > 300).
TEST(Codec, Int8DecodesToANeighbouringLevelOfItsBucketsNorm) {
  for (const std::size_t bucket : {64, 512}) {
    auto c = make_codec("int8:levels=7,bucket=" + std::to_string(bucket), 11);
    const auto x = random_values(300, 6);
    const auto p = encode(*c, x);
    EXPECT_EQ(p.size(), 16 + 5 + 4 * ((x.size() + bucket - 1) / bucket) + x.size());
    EXPECT_EQ(p.size(), c->encoded_bytes(x.size()));
    const auto y = decode(*c, p, x.size());
    for (std::size_t first = 0; first < x.size(); first += bucket) {
      const std::size_t last = std::min(x.size(), first + bucket);
      double sq = 0;
      for (std::size_t i = first; i < last; ++i) sq += double(x[i]) * x[i];
      const double norm = std::sqrt(sq);
      for (std::size_t i = first; i < last; ++i) {
        const double l = y[i] / norm * 7;
        EXPECT_NEAR(l, std::round(l), 1e-4) << bucket << " " << i;
        EXPECT_LE(std::fabs(y[i] - x[i]), norm / 7 * (1 + 1e-6)) << bucket << " " << i;
        EXPECT_TRUE(y[i] == 0 || (y[i] > 0) == (x[i] > 0)) << bucket << " " << i;
      }
    }
  }
}

// The error of a model-sized message (235,146 elements, the mlp's size) is bounded by the bucket:
// per element Var <= (norm_b / s)^2 / 4, so E|err|^2 <= sum_b B (norm_b / s)^2 / 4 = B |x|^2 / (4 s^2),
// a relative error of at most sqrt(B) / (2 s) = 0.089 for B = 512, s = 127 (one norm for the whole
// vector would allow sqrt(n) / (2 s) = 1.9: more noise than signal, which made model gossip diverge).
TEST(Codec, Int8RelativeErrorIsBoundedByTheBucketNotTheLength) {
  const auto x = random_values(235146, 21);
  auto c = make_codec("int8", 3);
  const auto y = decode(*c, encode(*c, x), x.size());
  double err = 0, sq = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    sq += double(x[i]) * x[i];
  }
  EXPECT_LE(std::sqrt(err / sq), std::sqrt(512.0) / (2 * 127));
  EXPECT_GT(err, 0);
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
  EXPECT_LE(p.size(), byk->encoded_bytes(x.size()));
  EXPECT_EQ(byk->encoded_bytes(x.size()), 16 + 9 + 4 * 37u + 125);  // bound: values + min(u32, bitmap)
  expect_topk(x, decode(*byk, p, x.size()), 37);
  auto byratio = make_codec("topk:ratio=0.0101");  // ceil(10.1) = 11
  expect_topk(x, decode(*byratio, encode(*byratio, x), x.size()), 11);
  auto all = make_codec("topk:k=5000");  // clamped to n
  EXPECT_EQ(decode(*all, encode(*all, x), x.size()), x);
}

// scope=tensor keeps the k_b largest of each layout block (and of the elements outside every
// block), checked block by block against the same selection on the block alone; without a layout
// it is the global selection.
TEST(Codec, TopkPerTensorKeepsEachBlocksShare) {
  auto x = random_values(1000, 11);
  for (std::size_t i = 600; i < 900; ++i) x[i] *= 1e-3f;  // a block of small values: global top-k skips it
  const core::Layout layout{core::TensorBlock{0, 600, 20, {20, 30}, "w1"},
                            core::TensorBlock{600, 300, 10, {10, 30}, "w2"}};  // [900, 1000) outside
  auto c = make_codec("topk:ratio=0.05,scope=tensor", 0, &layout);
  const auto y = decode(*c, encode(*c, x), x.size());
  auto part = [](const std::vector<float>& v, std::size_t b, std::size_t e) {
    return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(b), v.begin() + static_cast<std::ptrdiff_t>(e));
  };
  expect_topk(part(x, 0, 600), part(y, 0, 600), 30);
  expect_topk(part(x, 600, 900), part(y, 600, 900), 15);
  expect_topk(part(x, 900, 1000), part(y, 900, 1000), 5);
  EXPECT_LE(encode(*c, x).size(), c->encoded_bytes(x.size()));
  auto global = make_codec("topk:ratio=0.05,scope=global", 0, &layout);
  expect_topk(x, decode(*global, encode(*global, x), x.size()), 50);
  EXPECT_THROW(make_codec("topk:scope=layer"), core::InvalidArgument);
}

TEST(Codec, TopkBreaksTiesByLowerIndex) {
  auto c = make_codec("topk:k=3");
  const std::vector<float> x{1, -2, 2, 1, -2, 2, 0.5};
  const std::vector<float> expected{0, -2, 2, 0, -2, 0, 0};
  EXPECT_EQ(decode(*c, encode(*c, x), x.size()), expected);
}

// The reference selection: sort every index by (|x| descending, index ascending), keep k, sorted.
std::vector<float> reference_topk(const std::vector<float>& x, std::size_t k) {
  std::vector<std::uint32_t> idx(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) idx[i] = static_cast<std::uint32_t>(i);
  std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
    return std::fabs(x[a]) > std::fabs(x[b]) || (std::fabs(x[a]) == std::fabs(x[b]) && a < b);
  });
  std::vector<float> y(x.size(), 0.0f);
  for (std::size_t j = 0; j < k; ++j) y[idx[j]] = x[idx[j]];
  return y;
}

TEST(Codec, TopkOnLargeInputsWithManyTiesMatchesAFullSort) {
  // Large n takes the sampled-threshold path; few distinct magnitudes make ties everywhere.
  const std::size_t n = 300000;
  std::mt19937 g(21);
  std::vector<float> x(n);
  for (auto& v : x) v = float(int(g() % 9) - 4) * 0.5f;  // -2 .. 2, zeros included
  for (const char* spec : {"topk:ratio=0.01", "topk:k=1", "topk:k=40000", "topk:ratio=0.5"}) {
    SCOPED_TRACE(spec);
    auto c = make_codec(spec);
    const auto y = decode(*c, encode(*c, x), n);
    std::size_t k = 0;
    for (float v : y) k += v != 0;
    EXPECT_EQ(y, reference_topk(x, k));
  }
}

TEST(Codec, TopkFallsBackToEveryElementWhenTheSampleMisleads) {
  // The strided sample sees only large values (every 100th element from 50), so the sampled threshold
  // admits fewer than k candidates: the encoder must fall back to all elements and stay exact.
  const std::size_t n = 1638400;  // stride n / 16384 = 100
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = (i % 100 == 50) ? 100.0f : 1.0f + float(i % 7) * 1e-3f;
  auto c = make_codec("topk:ratio=0.012");  // k = 19661 > 16384 large values
  const auto y = decode(*c, encode(*c, x), n);
  EXPECT_EQ(y, reference_topk(x, 19661));
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
    if (y1[i] != 0) {
      ASSERT_EQ(y1[i], x[i]);
      s1.insert(i);
    }
    if (y2[i] != 0) {
      ASSERT_EQ(y2[i], x[i]);
      s2.insert(i);
    }
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
  EXPECT_LE(p.size(), 16 + 9 + 8 * kept);
  EXPECT_GE(p.size(), 16 + 9 + 4 * kept);
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

const char* const kSpecs[] = {"none",    "fp16", "bf16", "int8", "sign", "topk:k=4", "randk:k=4", "threshold:value=0.5",
                              "powersgd"};

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

// Sparse body (format version 2 and 3): u64 k at 16, u8 form at 24, k f32 values at 25, the index section at 25 + 4k.
std::vector<std::uint8_t> sparse_payload(std::size_t n, std::size_t k, std::uint8_t form,
                                         const std::vector<std::uint8_t>& index_section) {
  std::vector<std::uint8_t> p(25 + 4 * k, 0);
  std::memcpy(p.data(), "FCDC", 4);
  p[4] = 5;  // topk
  p[5] = 3;  // format version
  std::memcpy(p.data() + 8, &n, 8);
  std::memcpy(p.data() + 16, &k, 8);
  p[24] = form;
  for (std::size_t j = 0; j < k; ++j) {
    const float v = float(j + 1);
    std::memcpy(p.data() + 25 + 4 * j, &v, 4);
  }
  const std::size_t at = p.size();
  p.resize(at + index_section.size());
  if (!index_section.empty()) std::memcpy(p.data() + at, index_section.data(), index_section.size());
  return p;
}
std::vector<std::uint8_t> u32s(std::initializer_list<std::uint32_t> v) {
  std::vector<std::uint8_t> b(4 * v.size());
  std::size_t at = 0;
  for (auto i : v) std::memcpy(b.data() + 4 * at++, &i, 4);
  return b;
}

TEST(Codec, SparseIndexFormsDecodeToTheSameVector) {
  auto c = make_codec("topk:k=3");
  const std::vector<float> expected{0, 1, 0, 0, 2, 0, 0, 0, 0, 3, 0};  // indices 1, 4, 9 of n = 11
  EXPECT_EQ(decode(*c, sparse_payload(11, 3, 0, u32s({1, 4, 9})), 11), expected);
  EXPECT_EQ(decode(*c, sparse_payload(11, 3, 1, {1, 2, 4}), 11), expected);     // gaps 1, 4-1-1, 9-4-1
  EXPECT_EQ(decode(*c, sparse_payload(11, 3, 2, {0x12, 0x02}), 11), expected);  // bits 1, 4, 9
  // A multi-byte varint: index 300 = 0xac 0x02.
  std::vector<float> big(400, 0.0f);
  big[300] = 1.0f;
  EXPECT_EQ(decode(*c, sparse_payload(400, 1, 1, {0xac, 0x02}), 400), big);
}

TEST(Codec, SparseEncoderPicksTheSmallestIndexForm) {
  // Dense selection (k = n/2): bitmap; spread selection with small gaps: delta; huge gaps: u32 vs delta.
  std::vector<float> x(64, 0.0f);
  for (std::size_t i = 0; i < 64; i += 2) x[i] = 1.0f + float(i);
  auto half = make_codec("threshold:value=0.5");
  const auto p = encode(*half, x);
  EXPECT_EQ(p[24], 2);  // bitmap: 8 bytes < 32 delta bytes < 128 u32 bytes
  EXPECT_EQ(p.size(), 25 + 4 * 32u + 8);
  EXPECT_EQ(decode(*half, p, x.size()), x);

  std::vector<float> sparse(10000, 0.0f);
  for (std::size_t i = 5; i < 10000; i += 100) sparse[i] = -float(i);
  auto c = make_codec("topk:k=100");
  const auto q = encode(*c, sparse);
  EXPECT_EQ(q[24], 1);  // delta: 100 one-byte gaps (5, then 99s) < 400 u32 bytes < 1250 bitmap bytes
  EXPECT_EQ(q.size(), 25 + 4 * 100u + 100);
  EXPECT_EQ(decode(*c, q, sparse.size()), sparse);

  // Two elements far apart: delta 4 + 4 bytes ties with u32's 8 bytes; the tie goes to u32 (form 0).
  std::vector<float> far((1u << 22) + 10, 0.0f);
  far[(1u << 21) + 1] = 1.0f;
  far[(1u << 22) + 5] = 2.0f;
  auto two = make_codec("topk:k=2");
  const auto r = encode(*two, far);
  EXPECT_EQ(r[24], 0);
  EXPECT_EQ(r.size(), 25 + 8 + 8u);
}

// Compression ratio 4n / payload of topk at 1% on the mlp's gradient size, for normal-distributed values
// (indices spread uniformly: mean gap 100, mostly one-byte varints).
TEST(Codec, TopkOnePercentCompressesMlpSizedGradientsAtLeast70x) {
  const std::size_t n = 235146;
  std::mt19937 g(77);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = d(g);
  auto c = make_codec("topk:ratio=0.01");
  const auto p = encode(*c, x);
  EXPECT_EQ(p[24], 1);
  EXPECT_GE(4.0 * double(n) / double(p.size()), 70.0) << p.size() << " bytes";
  expect_topk(x, decode(*c, p, n), 2352);
  auto r = make_codec("randk:ratio=0.01", 1);
  EXPECT_GE(4.0 * double(n) / double(encode(*r, x).size()), 99.0);  // values only: 16 + 16 + 4k
}

TEST(CodecMalformed, SparseBodyDefectsAreRejected) {
  const auto x = random_values(10, 14);
  for (const char* spec : {"topk:k=4", "threshold:value=0"}) {
    SCOPED_TRACE(spec);
    auto c = make_codec(spec);
    const auto good = encode(*c, x);
    auto big_k = good;
    put_u64(big_k, 16, 11);
    expect_rejected(*c, big_k, x.size(), "k = 11 exceeds n = 10");
    auto huge_k = good;
    put_u64(huge_k, 16, ~0ull);  // would overflow a naive size computation
    expect_rejected(*c, huge_k, x.size(), "exceeds n");
    auto form = good;
    form[24] = 3;
    expect_rejected(*c, form, x.size(), "index form 3");
  }
  auto c = make_codec("topk:k=3");
  const std::size_t n = 11;
  // u32 form
  expect_rejected(*c, sparse_payload(n, 3, 0, u32s({1, 4})), n, "truncated");
  expect_rejected(*c, sparse_payload(n, 3, 0, u32s({1, 4, 9, 0})), n, "wrong-length");
  expect_rejected(*c, sparse_payload(n, 3, 0, u32s({1, 4, 11})), n, "out of range");
  expect_rejected(*c, sparse_payload(n, 3, 0, u32s({1, 4, 4})), n, "not above the previous index");
  expect_rejected(*c, sparse_payload(n, 3, 0, {}), n, "truncated");
  // delta form
  expect_rejected(*c, sparse_payload(n, 3, 1, {1, 2}), n, "truncated delta");
  expect_rejected(*c, sparse_payload(n, 3, 1, {1, 2, 4, 0}), n, "trailing");
  expect_rejected(*c, sparse_payload(n, 3, 1, {1, 2, 6}), n, "out of range");        // 1, 4, 11
  expect_rejected(*c, sparse_payload(n, 3, 1, {1, 2, 0x81}), n, "truncated delta");  // continuation bit at the end
  expect_rejected(*c, sparse_payload(n, 3, 1, {1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f}), n, "out of range");
  expect_rejected(*c, sparse_payload(n, 3, 1, {1, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}), n, "longer than 5 bytes");
  // bitmap form
  expect_rejected(*c, sparse_payload(n, 3, 2, {0x12}), n, "truncated");
  expect_rejected(*c, sparse_payload(n, 3, 2, {0x12, 0x02, 0x00}), n, "wrong-length");
  expect_rejected(*c, sparse_payload(n, 3, 2, {0x12, 0x06}), n, "popcount 4");
  expect_rejected(*c, sparse_payload(n, 3, 2, {0x02, 0x0a}), n, "padding");  // bit 11 >= n
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
  auto q = make_codec("int8:levels=3,bucket=4");  // 3 buckets: body = s, bucket, 3 norms, 10 levels
  const auto good = encode(*q, x);
  ASSERT_EQ(good.size(), 16 + 5 + 12 + 10u);
  auto level = good;
  level[33 + 2] = 4;  // |level| > s = 3
  expect_rejected(*q, level, x.size(), "out of range");
  auto levels = good;
  levels[16] = 0;
  expect_rejected(*q, levels, x.size(), "levels 0");
  auto norm = good;
  const float nan = NAN;
  std::memcpy(norm.data() + 21 + 4, &nan, 4);
  expect_rejected(*q, norm, x.size(), "norm nan of bucket 1");
  auto bucket = good;
  const std::uint32_t zero = 0, five = 5;
  std::memcpy(bucket.data() + 17, &zero, 4);
  expect_rejected(*q, bucket, x.size(), "bucket 0");
  std::memcpy(bucket.data() + 17, &five, 4);  // 2 buckets of 5: 4 bytes too many
  expect_rejected(*q, bucket, x.size(), "4 per bucket");

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
