// The data order (data_order.hpp): each epoch's permutation of the training set.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
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

TEST(SharedEpochPermutation, IsTheEpochsPermutationComputedOnceForItsCallers) {
  const auto a = shared_epoch_permutation(10, 42, 0);
  EXPECT_EQ(*a, (std::vector<std::int64_t>{2, 9, 0, 7, 3, 6, 5, 4, 8, 1}));  // as above
  EXPECT_EQ(shared_epoch_permutation(10, 42, 0).get(), a.get());              // the same one, shared
  const auto b = shared_epoch_permutation(10, 42, 1);                         // another epoch
  EXPECT_EQ(*b, epoch_permutation(10, 42, 1));
  EXPECT_EQ(*a, epoch_permutation(10, 42, 0));  // a caller's copy outlives the next one asked for
  EXPECT_EQ(*shared_epoch_permutation(20, 7, 3), epoch_permutation(20, 7, 3));
  EXPECT_EQ(*shared_epoch_permutation(10, 43, 1), epoch_permutation(10, 43, 1));  // another seed
  // Many threads at once: each gets the permutation.
  std::vector<std::thread> threads;
  std::vector<std::vector<std::int64_t>> got(8);
  for (std::size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&got, t] { got[t] = *shared_epoch_permutation(1000, 3, static_cast<std::int64_t>(t % 2)); });
  for (auto& t : threads) t.join();
  for (std::size_t t = 0; t < got.size(); ++t) EXPECT_EQ(got[t], epoch_permutation(1000, 3, static_cast<std::int64_t>(t % 2)));
}

}  // namespace
}  // namespace fast::training
