// The data order (data_order.hpp): each epoch's permutation of the training set.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fast/training/data_order.hpp"

namespace fast::training {
namespace {

TEST(EpochPermutation, MatchesTheDocumentedRule) {
  // Computed independently (Python transcription of the rule in data_order.hpp, with its own mt19937_64).
  EXPECT_EQ(epoch_permutation(10, 42, 0), (std::vector<std::int64_t>{2, 9, 0, 7, 3, 6, 5, 4, 8, 1}));
  EXPECT_EQ(epoch_permutation(10, 42, 1), (std::vector<std::int64_t>{7, 3, 4, 1, 8, 5, 0, 9, 2, 6}));
  EXPECT_EQ(epoch_permutation(20, 7, 3),
            (std::vector<std::int64_t>{4, 8, 0, 13, 9, 17, 2, 11, 6, 10, 7, 3, 12, 5, 16, 14, 18, 19, 15, 1}));
}

TEST(EpochPermutation, IsAPermutation) {
  auto p = epoch_permutation(1000, 1, 5);
  std::sort(p.begin(), p.end());
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(p[static_cast<std::size_t>(i)], i);
  EXPECT_TRUE(epoch_permutation(0, 1, 0).empty());
  EXPECT_EQ(epoch_permutation(1, 1, 0), std::vector<std::int64_t>{0});
}

}  // namespace
}  // namespace fast::training
