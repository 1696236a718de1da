// Request headers of the window and parameter-server services (include/fast/wire/requests.hpp):
// round trips, each validation naming its field, and a fuzz run of random words that always ends in
// a valid request or an InvalidArgument.
#include <gtest/gtest.h>

#include <bit>
#include <limits>
#include <random>
#include <string>

#include "fast/core/error.hpp"
#include "fast/wire/requests.hpp"

namespace fast::wire {
namespace {

template <typename R, std::size_t N>
std::string error_of(const std::array<std::int64_t, N>& w) {
  try {
    R::from_words(w);
  } catch (const core::InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(WireRequests, WindowRequestRoundTripsEveryField) {
  const WindowRequest r{.op = WindowRequest::Op::exchange_difference,
                        .offset = 12,
                        .count = 34,
                        .dtype = core::DType::f64,
                        .seq = 0x3FFFFF,
                        .encoded = true,
                        .scale = -0.25,
                        .scale_at = 7,
                        .summed = 2,
                        .coefficients = {0.5, -1.5, 2.0}};
  const WindowRequest d = WindowRequest::from_words(r.to_words());
  EXPECT_EQ(d.op, r.op);
  EXPECT_EQ(d.offset, 12u);
  EXPECT_EQ(d.count, 34u);
  EXPECT_EQ(d.dtype, core::DType::f64);
  EXPECT_EQ(d.seq, 0x3FFFFFu);
  EXPECT_TRUE(d.encoded);
  EXPECT_EQ(d.scale, -0.25);
  EXPECT_EQ(d.scale_at, 7);
  EXPECT_EQ(d.summed, 2u);
  EXPECT_EQ(d.coefficients, r.coefficients);
  EXPECT_STREQ(name_of(d.op), "exchange_difference");
}

TEST(WireRequests, WindowRequestValidationNamesTheField) {
  const auto good = WindowRequest{.op = WindowRequest::Op::put, .count = 4}.to_words();
  auto w = good;
  w[0] = 8;
  EXPECT_NE((error_of<WindowRequest>(w)).find("op: expected 1-7 or 9, got 8"), std::string::npos);
  w = good;
  w[1] = -5;
  EXPECT_NE((error_of<WindowRequest>(w)).find("offset and count: expected >= 0, got -5 and 4"), std::string::npos);
  w = good;
  w[3] = 99;
  EXPECT_NE((error_of<WindowRequest>(w)).find("dtype: expected 0-6, got 99"), std::string::npos);
  w = good;
  w[5] = 2;
  EXPECT_NE((error_of<WindowRequest>(w)).find("encoded: expected 0 or 1, got 2"), std::string::npos);
  w = good;
  w[9] = 5;
  EXPECT_NE((error_of<WindowRequest>(w)).find("blocks and summed"), std::string::npos);
  w = WindowRequest{.op = WindowRequest::Op::exchange_difference, .summed = 1, .coefficients = {1.0}}.to_words();
  w[10] = std::bit_cast<std::int64_t>(std::numeric_limits<double>::quiet_NaN());
  EXPECT_NE((error_of<WindowRequest>(w)).find("coefficient 0: expected a finite number"), std::string::npos);
  w = WindowRequest{.op = WindowRequest::Op::exchange_difference, .summed = 0, .coefficients = {1.0}}.to_words();
  EXPECT_NE((error_of<WindowRequest>(w)).find("expected 1 <= summed <= blocks"), std::string::npos);
}

TEST(WireRequests, PsRequestRoundTripsAndValidates) {
  const PsRequest r{.kind = PsRequest::Kind::push, .clock = 41, .version = 40, .finite = false, .lr = 0.05};
  const PsRequest d = PsRequest::from_words(r.to_words());
  EXPECT_EQ(d.kind, r.kind);
  EXPECT_EQ(d.clock, 41);
  EXPECT_EQ(d.version, 40u);
  EXPECT_FALSE(d.finite);
  EXPECT_EQ(d.lr, 0.05);
  auto w = r.to_words();
  w[0] = 4;
  EXPECT_EQ(PsRequest::from_words(w).kind, PsRequest::Kind::join);
  for (const std::int64_t kind : {0, 5}) {
    w[0] = kind;
    EXPECT_NE((error_of<PsRequest>(w))
                  .find("kind: expected 1 (push), 2 (done), 3 (stop) or 4 (join), got " + std::to_string(kind)),
              std::string::npos);
  }
  w = r.to_words();
  w[1] = -1;
  EXPECT_NE((error_of<PsRequest>(w)).find("clock: expected >= 0, got -1"), std::string::npos);
  w = r.to_words();
  w[4] = std::bit_cast<std::int64_t>(std::numeric_limits<double>::infinity());
  EXPECT_NE((error_of<PsRequest>(w)).find("lr: expected a finite number"), std::string::npos);
}

TEST(WireRequests, FuzzOfRandomWordsEndsInARequestOrAnError) {
  std::mt19937_64 random(7);
  int ok = 0, bad = 0;
  for (int i = 0; i < 100000; ++i) {
    std::array<std::int64_t, WindowRequest::kWords> w = WindowRequest{.op = WindowRequest::Op::get}.to_words();
    for (int k = 0; k < 1 + static_cast<int>(random() % 3); ++k)
      w[random() % w.size()] =
          random() % 2 ? static_cast<std::int64_t>(random()) : static_cast<std::int64_t>(random() % 12) - 2;
    try {
      const WindowRequest r = WindowRequest::from_words(w);
      EXPECT_EQ(WindowRequest::from_words(r.to_words()).to_words(), r.to_words());
      ++ok;
    } catch (const core::InvalidArgument&) {
      ++bad;
    }
  }
  EXPECT_EQ(ok + bad, 100000);
  EXPECT_GT(bad, 0);
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace fast::wire
