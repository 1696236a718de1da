// DeviceEncoder on the CPU: its payloads against compress::make_codec(spec)'s encode of the same
// values, byte for byte (sign: the bits byte for byte, the scale within one float step, as the two
// sums run in different orders), with ties, signed zeros, odd lengths and the codecs' errors.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <torch/types.h>

#include "fast/adapters/torch/device_codec.hpp"
#include "fast/compress/codec.hpp"
#include "fast/compress/pack.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

// n values with many equal magnitudes (multiples of 1/8 in [-4, 4]) and signed zeros.
std::vector<float> tied_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> level(-32, 32);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(level(rng)) / 8.0f;
  for (std::size_t i = 0; i < n; i += 11) x[i] = (i % 2 == 0) ? 0.0f : -0.0f;
  return x;
}

std::vector<float> spread_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng) * std::pow(10.0f, static_cast<float>(static_cast<int>(rng() % 9) - 6));
  return x;
}

core::Buffer host_payload(const std::string& spec, const std::vector<float>& x) {
  core::Buffer out;
  compress::make_codec(spec)->encode(core::ConstView(std::span<const float>(x)), out);
  return out;
}

core::Buffer device_payload(const std::string& spec, std::vector<float> x) {
  core::Buffer out;
  const ::torch::Tensor t =
      ::torch::from_blob(x.data(), {static_cast<std::int64_t>(x.size())}, ::torch::kFloat32).clone();
  DeviceEncoder(spec).encode(t, out);
  return out;
}

bool same_bytes(const core::Buffer& a, const core::Buffer& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

class DeviceEncoderPayload : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceEncoderPayload, IsTheCodecsOwnByteForByte) {
  const std::string spec = GetParam();
  for (const std::size_t n : {0u, 1u, 7u, 8u, 1000u, 100003u}) {
    for (const auto& x : {tied_values(n, n + 1), spread_values(n, n + 2)}) {
      const core::Buffer host = host_payload(spec, x);
      const core::Buffer device = device_payload(spec, x);
      if (spec != "sign") {
        EXPECT_TRUE(same_bytes(host, device))
            << spec << ", n = " << n << ": " << host.bytes() << " vs " << device.bytes() << " bytes";
        continue;
      }
      ASSERT_EQ(host.bytes(), device.bytes()) << "sign, n = " << n;
      const auto* h = static_cast<const std::uint8_t*>(host.data());
      const auto* d = static_cast<const std::uint8_t*>(device.data());
      EXPECT_EQ(std::memcmp(h, d, compress::kHeaderBytes), 0) << "sign header, n = " << n;
      float hs, ds;
      std::memcpy(&hs, h + compress::kHeaderBytes, 4);
      std::memcpy(&ds, d + compress::kHeaderBytes, 4);
      EXPECT_LE(std::fabs(hs - ds), std::nextafter(hs, INFINITY) - hs) << "sign scale, n = " << n;
      EXPECT_EQ(std::memcmp(h + compress::kHeaderBytes + 4, d + compress::kHeaderBytes + 4,
                            host.bytes() - compress::kHeaderBytes - 4),
                0)
          << "sign bits, n = " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, DeviceEncoderPayload,
                         ::testing::Values("fp16", "bf16", "sign", "topk", "topk:ratio=0.001", "topk:ratio=0.3",
                                           "topk:ratio=1"));

TEST(DeviceEncoder, TheCodecsDecodeWhatItWrites) {
  const std::vector<float> x = spread_values(5000, 9);
  core::Buffer payload = device_payload("topk:ratio=0.05", x);
  std::vector<float> y(x.size(), -1.0f);
  compress::make_codec("topk")->decode(core::ConstView(payload.data(), payload.bytes(), core::DType::u8),
                                       core::MutableView(std::span<float>(y)));
  std::size_t kept = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (y[i] != 0.0f) {
      EXPECT_EQ(y[i], x[i]) << i;
      ++kept;
    }
  }
  EXPECT_EQ(kept, compress::kept_count(0.05, x.size()));
}

TEST(DeviceEncoder, RefusesWhatTheCodecRefusesNamingTheElement) {
  std::vector<float> x(10, 1.0f);
  x[6] = 70000.0f;
  try {
    device_payload("fp16", x);
    ADD_FAILURE() << "fp16 overflow accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("element 6 = 70000 overflows fp16"), std::string::npos) << e.what();
  }
  x[6] = std::nanf("");
  try {
    device_payload("topk", x);
    ADD_FAILURE() << "non-finite topk input accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("element 6 = nan is not finite"), std::string::npos) << e.what();
  }
  EXPECT_THROW(host_payload("topk", x), InvalidArgument);
}

TEST(DeviceEncoder, OffersTheDeviceCodecsOnlyAndChecksItsInput) {
  for (const char* spec : {"int8", "randk", "powersgd", "none", "topk:k=5", "topk:ratio=0.1,scope=tensor"}) {
    try {
      DeviceEncoder encoder(spec);
      ADD_FAILURE() << "accepted " << spec;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("not offered on the device"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(DeviceEncoder("topk:ratio=2"), InvalidArgument);  // make_codec's range check
  core::Buffer out;
  EXPECT_THROW(DeviceEncoder("fp16").encode(::torch::zeros({2, 3}), out), InvalidArgument);
  EXPECT_THROW(DeviceEncoder("fp16").encode(::torch::zeros({4}, ::torch::kFloat64), out), InvalidArgument);
  DeviceEncoder topk("topk:ratio=0.5");
  EXPECT_TRUE(topk.set_keep_ratio(0.25));
  EXPECT_FALSE(DeviceEncoder("sign").set_keep_ratio(0.25));
}

TEST(Pack, RefusesInconsistentParts) {
  core::Buffer out;
  const std::vector<std::uint32_t> idx{3, 2};
  const std::vector<float> values{1, 2};
  EXPECT_THROW(compress::pack_sparse(compress::CodecId::topk, 10, idx, values, out),
               InvalidArgument);  // not increasing
  const std::vector<std::uint32_t> far{3, 12};
  EXPECT_THROW(compress::pack_sparse(compress::CodecId::topk, 10, far, values, out), InvalidArgument);  // >= n
  EXPECT_THROW(compress::pack_sparse(compress::CodecId::topk, 10, std::vector<std::uint32_t>{3}, values, out),
               InvalidArgument);
  EXPECT_THROW(compress::pack_sign(9, 1.0f, std::vector<std::uint8_t>{0}, out), InvalidArgument);     // 2 bytes needed
  EXPECT_THROW(compress::pack_sign(9, 1.0f, std::vector<std::uint8_t>{0, 2}, out), InvalidArgument);  // padding bit
  EXPECT_THROW(compress::pack_sign(8, -1.0f, std::vector<std::uint8_t>{0}, out), InvalidArgument);    // scale < 0
  EXPECT_THROW(compress::pack_halves(compress::CodecId::sign, std::vector<std::uint16_t>{1}, out), InvalidArgument);
}

}  // namespace
}  // namespace fast::torch
