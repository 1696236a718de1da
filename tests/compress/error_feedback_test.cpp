#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/compress/error_feedback.hpp"
#include "fast/core/error.hpp"

namespace fast::compress {
namespace {

class ErrorFeedbackSum : public ::testing::TestWithParam<std::string> {};

// sum_t decode(m_t) + residual == sum_t x_t, to 1e-6 of |sum x|, over 50 steps of two keys.
TEST_P(ErrorFeedbackSum, DecodedPlusResidualEqualsInputsOver50Steps) {
  const std::size_t n = 200;
  ErrorFeedback ef(make_codec(GetParam(), 7));
  std::mt19937 g(1);
  std::normal_distribution<float> d(0.3f, 1.0f);
  for (std::uint64_t key : {1ull, 2ull}) {
    std::vector<double> sum_x(n, 0.0), sum_d(n, 0.0);
    core::Buffer msg;
    std::vector<float> x(n), y(n);
    for (int step = 0; step < 50; ++step) {
      for (auto& v : x) v = d(g);
      ef.encode(key, std::span<const float>(x), msg);
      ef.codec().decode(msg.view(), std::span<float>(y));
      for (std::size_t i = 0; i < n; ++i) {
        sum_x[i] += x[i];
        sum_d[i] += y[i];
      }
    }
    const auto r = ef.residual(key);
    ASSERT_EQ(r.size(), n);
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < n; ++i) {
      err += std::pow(sum_d[i] + r[i] - sum_x[i], 2);
      norm += sum_x[i] * sum_x[i];
    }
    EXPECT_LE(std::sqrt(err), 1e-6 * std::sqrt(norm)) << "key " << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, ErrorFeedbackSum,
                         ::testing::Values("none", "fp16", "bf16", "int8:levels=3", "sign", "topk:ratio=0.05",
                                           "randk:k=10", "threshold:value=1.5", "powersgd"),
                         [](const auto& info) {
                           std::string s = info.param.substr(0, info.param.find(':'));
                           return s;
                         });

TEST(ErrorFeedback, TopkResidualCarriesWhatWasNotSent) {
  ErrorFeedback ef(make_codec("topk:k=1"));
  core::Buffer msg;
  const std::vector<float> x{3.0f, 2.0f, 1.0f};
  ef.encode(9, std::span<const float>(x), msg);  // sends 3 at index 0
  EXPECT_EQ(std::vector<double>(ef.residual(9).begin(), ef.residual(9).end()), (std::vector<double>{0, 2, 1}));
  ef.encode(9, std::span<const float>(x), msg);  // corrected = {3, 4, 2}: sends 4 at index 1
  std::vector<float> y(3);
  ef.codec().decode(msg.view(), std::span<float>(y));
  EXPECT_EQ(y, (std::vector<float>{0, 4, 0}));
  EXPECT_EQ(std::vector<double>(ef.residual(9).begin(), ef.residual(9).end()), (std::vector<double>{3, 0, 2}));
  EXPECT_TRUE(ef.residual(10).empty());
  ef.reset(9);
  EXPECT_TRUE(ef.residual(9).empty());
}

TEST(ErrorFeedback, CodecErrorLeavesResidualUnchanged) {
  ErrorFeedback ef(make_codec("fp16"));
  core::Buffer msg;
  const std::vector<float> x{1.0f + 1.0f / 4096, 2.0f};
  ef.encode(1, std::span<const float>(x), msg);
  const std::vector<double> before(ef.residual(1).begin(), ef.residual(1).end());
  const std::vector<float> big{1.0f, 1e6f};
  EXPECT_THROW(ef.encode(1, std::span<const float>(big), msg), InvalidArgument);
  EXPECT_EQ(std::vector<double>(ef.residual(1).begin(), ef.residual(1).end()), before);
  EXPECT_THROW(ef.encode(2, std::span<const float>(big), msg), InvalidArgument);
  EXPECT_TRUE(ef.residual(2).empty());
}

TEST(ErrorFeedback, SizeChangeForAKeyIsRejected) {
  ErrorFeedback ef(make_codec("sign"));
  core::Buffer msg;
  const std::vector<float> a(4, 1.0f), b(5, 1.0f);
  ef.encode(1, std::span<const float>(a), msg);
  EXPECT_THROW(ef.encode(1, std::span<const float>(b), msg), InvalidArgument);
  ef.encode(2, std::span<const float>(b), msg);
  EXPECT_EQ(ef.residual(2).size(), 5u);
  EXPECT_THROW(ErrorFeedback(nullptr), InvalidArgument);
}

}  // namespace
}  // namespace fast::compress
