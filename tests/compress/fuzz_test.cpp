#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"

namespace fast::compress {
namespace {

// Random corruptions of valid payloads (byte flips, truncations, extensions) either decode or throw
// InvalidArgument, and a rejected payload leaves the output unchanged. Run under the sanitizers
// (make sanitize) this also checks that decode never reads outside the payload.
TEST(CodecFuzz, CorruptedPayloadsDecodeOrAreRejectedCleanly) {
  const std::size_t n = 300;
  const core::Layout layout{core::TensorBlock{0, 240, 12, {12, 20}, "w"}, core::TensorBlock{240, 60, 1, {60}, "b"}};
  std::mt19937 g(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = d(g);
  // Sparse specs chosen so that each index form occurs: k = 3 (u32/delta), 30 (delta), 200 (bitmap).
  for (const std::string spec : {"none", "fp16", "bf16", "int8", "sign", "topk:k=3", "topk:k=30", "topk:k=200",
                                 "randk:k=20", "threshold:value=0.5", "powersgd:rank=3"}) {
    SCOPED_TRACE(spec);
    auto c = make_codec(spec, 1, &layout);
    core::Buffer out;
    c->encode(std::span<const float>(x), out);
    const auto good = out.as<std::uint8_t>();
    int accepted = 0, rejected = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<std::uint8_t> p(good.begin(), good.end());
      switch (trial % 3) {
        case 0:  // flip 1-3 bytes anywhere
          for (int f = 0, m = 1 + int(g() % 3); f < m; ++f)
            p[g() % p.size()] ^= static_cast<std::uint8_t>(1 + g() % 255);
          break;
        case 1:  // truncate
          p.resize(g() % p.size());
          break;
        default:  // flip a byte of the body, then extend or shorten by a few bytes
          if (p.size() > 16) p[16 + g() % (p.size() - 16)] ^= static_cast<std::uint8_t>(1 + g() % 255);
          p.resize(p.size() + (g() % 9) - 4);
      }
      std::vector<float> y(n, 42.0f);
      try {
        c->decode(std::span<const std::uint8_t>(p), std::span<float>(y));
        ++accepted;
      } catch (const InvalidArgument&) {
        ++rejected;
        for (float v : y) ASSERT_EQ(v, 42.0f);
      }
    }
    EXPECT_GT(rejected, 0);
    EXPECT_EQ(accepted + rejected, 3000);
  }
}

}  // namespace
}  // namespace fast::compress
