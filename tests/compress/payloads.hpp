#pragma once
// Helpers of the codec tests: a codec's payload as bytes, decoded back, and a payload's refusal.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/core/error.hpp"

namespace fast::compress::payloads {

// x encoded by c, as bytes (a payload is a u8 buffer).
inline std::vector<std::uint8_t> encode(Codec& c, const std::vector<float>& x) {
  core::Buffer out;
  c.encode(std::span<const float>(x), out);
  EXPECT_EQ(out.dtype(), core::DType::u8);
  auto b = out.as<std::uint8_t>();
  return {b.begin(), b.end()};
}

// payload decoded into n elements that start at 42 (so an element left unwritten shows).
inline std::vector<float> decode(const Codec& c, const std::vector<std::uint8_t>& payload, std::size_t n) {
  std::vector<float> y(n, 42.0f);
  c.decode(std::span<const std::uint8_t>(payload), std::span<float>(y));
  return y;
}

// Decoding `payload` into n elements throws InvalidArgument whose message names the codec and contains
// `what`, and leaves the output untouched.
inline void expect_rejected(const Codec& c, const std::vector<std::uint8_t>& payload, std::size_t n,
                            const std::string& what) {
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

// Writes v at byte `at` of p (host order, as the payload headers are).
inline void put_u64(std::vector<std::uint8_t>& p, std::size_t at, std::uint64_t v) {
  std::memcpy(p.data() + at, &v, 8);
}

}  // namespace fast::compress::payloads
