// The one checked integer conversion (core/parse.hpp): every type's bounds, text beyond int64,
// floats and junk, and the three message forms.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "fast/core/error.hpp"
#include "fast/core/parse.hpp"

namespace fast::core {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Parse, IntegersReadBackWithinTheirTypeAndRange) {
  EXPECT_EQ(parse_int<int>("2147483647", "k"), 2147483647);
  EXPECT_EQ(parse_int<int>("-2147483648", "k"), std::numeric_limits<int>::min());
  EXPECT_EQ(parse_int<std::int64_t>("9223372036854775807", "k"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_int<std::uint8_t>("255", "k"), 255);
  EXPECT_EQ(parse_int<long long>("-1", "k", -1, 5), -1);
  EXPECT_THROW((void)checked_int<std::uint64_t>(std::uint64_t{1} << 63, "k"), InvalidArgument);  // above 2^63 - 1
}

TEST(Parse, ValuesBeyondTheTypeOrRangeAreRefusedNamingKeyRangeAndValue) {
  EXPECT_EQ(error_of([] { (void)parse_int<int>("4294967299", "--workers"); }),
            "--workers: expected an integer from -2147483648 to 2147483647, got 4294967299");
  EXPECT_EQ(error_of([] { (void)parse_int<int>("9223372036854775808", "k", 1, 10); }),
            "k: expected an integer from -9223372036854775808 to 9223372036854775807, got '9223372036854775808'");
  EXPECT_EQ(error_of([] { (void)parse_int<unsigned>("-1", "k"); }), "k: expected an integer >= 0, got -1");
  EXPECT_EQ(error_of([] { (void)parse_int<int>("0", "hosts", 1); }), "hosts: expected an integer >= 1, got 0");
  EXPECT_EQ(error_of([] { (void)parse_int<int>("0", "hosts", 1, 8); }),
            "hosts: expected an integer from 1 to 8, got 0");
  EXPECT_EQ(error_of([] { (void)checked_int<std::int8_t>(std::numeric_limits<std::int64_t>::min(), "w"); }),
            "w: expected an integer >= -128, got -9223372036854775808");
  EXPECT_EQ(error_of([] { (void)checked_int<int>(std::numeric_limits<std::uint64_t>::max(), "w", 0, 9); }),
            "w: expected an integer from 0 to 9, got 18446744073709551615");
}

TEST(Parse, AnythingButDecimalDigitsIsNotAnInteger) {
  for (const char* text : {"", "1.5", "1e3", "0x10", "+3", " 3", "3 ", "3a", "-", "nan"})
    EXPECT_EQ(error_of([&] { (void)parse_int64(text, "k"); }), fmt::format("k: expected an integer, got '{}'", text))
        << text;
}

}  // namespace
}  // namespace fast::core
