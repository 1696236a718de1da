// core::sum_of_squares and sum_of_squared_differences against closed forms, at lengths on both
// sides of the interleaved lanes, and their order of addition (the fixed lane order).
#include <gtest/gtest.h>

#include <vector>

#include "fast/core/error.hpp"
#include "fast/core/sum_of_squares.hpp"

namespace fast::core {
namespace {

// 1^2 + 2^2 + ... + n^2 = n(n + 1)(2n + 1) / 6, exact in double for these n.
double squares_up_to(std::size_t n) { return static_cast<double>(n * (n + 1) * (2 * n + 1)) / 6.0; }

TEST(SumOfSquares, EqualsTheClosedFormAtEveryLengthAroundTheLanes) {
  for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 15u, 16u, 17u, 1000u, 100003u}) {
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i + 1);
    EXPECT_EQ(sum_of_squares(x), squares_up_to(n)) << n << " elements";
  }
}

TEST(SumOfSquares, DifferencesAreTakenInDoubleElementByElement) {
  for (std::size_t n : {0u, 3u, 8u, 13u, 4099u}) {
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i + 1) + 0.5f;  // x - y = i + 1, exactly
      y[i] = 0.5f;
    }
    EXPECT_EQ(sum_of_squared_differences(x, y), squares_up_to(n)) << n << " elements";
    EXPECT_EQ(sum_of_squared_differences(y, x), squares_up_to(n)) << n << " elements";
  }
  // 1e8f - (-1.0f) is 100000001 in double; in float it would round to 1e8.
  const std::vector<float> big{1e8f}, minus_one{-1.0f};
  EXPECT_EQ(sum_of_squared_differences(big, minus_one), 100000001.0 * 100000001.0);
  EXPECT_NE(sum_of_squared_differences(big, minus_one), 1e16);
  const std::vector<float> a(3), b(4);
  EXPECT_THROW(sum_of_squared_differences(a, b), InvalidArgument);
}

TEST(SumOfSquares, AddsEachLaneOnItsOwnThenTheLanesInOrder) {
  // Eight 1s and then 1e16 (the square of 1e8f), which lands in lane 0 beside the first 1.
  // In lanes: lane 0 = 1 + 1e16, which rounds to 1e16 (doubles near 1e16 are 2 apart, ties to
  // even), and adding the other lanes' 1s one by one to 1e16 rounds each away: 1e16. One running
  // sum would give 8 + 1e16 = 1e16 + 8 (exact).
  std::vector<float> x(9, 1.0f);
  x[8] = 1e8f;
  EXPECT_EQ(sum_of_squares(x), 1e16);
  EXPECT_NE(sum_of_squares(x), 1e16 + 8);
}

}  // namespace
}  // namespace fast::core
