#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <torch/types.h>

#include "fast/adapters/torch/loader.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

// N samples; image i is filled with the value i, label i is i % 10.
std::shared_ptr<const Dataset> numbered(std::int64_t n) {
  auto d = std::make_shared<Dataset>();
  d->samples = ::torch::arange(n, ::torch::kFloat32).view({n, 1, 1, 1}).expand({n, 1, 28, 28}).contiguous();
  d->labels = ::torch::arange(n, ::torch::kInt64).remainder(10);
  return d;
}

TEST(ShardedLoader, FourWorkersOfBatch16TogetherSeeOneWorkerOfBatch64InOrder) {
  const auto data = numbered(1000);
  ShardedLoader one(data, 0, 1, 64, 9);
  std::vector<ShardedLoader> four;
  for (int r = 0; r < 4; ++r) four.emplace_back(data, r, 4, 16, 9);
  ASSERT_EQ(one.steps_per_epoch(), 15);
  for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
    for (std::int64_t step = 0; step < one.steps_per_epoch(); ++step) {
      ASSERT_EQ(four[0].steps_per_epoch(), 15);
      const Batch whole = one.batch(epoch, step);
      std::vector<::torch::Tensor> xs, ys;
      for (const auto& w : four) {
        const Batch b = w.batch(epoch, step);
        xs.push_back(b.x);
        ys.push_back(b.y);
      }
      ASSERT_TRUE(::torch::equal(::torch::cat(xs), whole.x)) << "epoch " << epoch << " step " << step;
      ASSERT_TRUE(::torch::equal(::torch::cat(ys), whole.y)) << "epoch " << epoch << " step " << step;
    }
  }
}

TEST(ShardedLoader, WorkerBatchesAreSlicesOfTheEpochPermutation) {
  const auto data = numbered(100);
  const auto perm = training::epoch_permutation(100, 3, 2);
  for (int r = 0; r < 3; ++r) {
    ShardedLoader loader(data, r, 3, 8, 3);
    EXPECT_EQ(loader.steps_per_epoch(), 4);  // floor(100 / 24)
    for (std::int64_t t = 0; t < 4; ++t) {
      const auto begin = perm.begin() + t * 24 + r * 8;
      EXPECT_EQ(loader.indices(2, t), std::vector<std::int64_t>(begin, begin + 8));
    }
  }
}

TEST(ShardedLoader, BatchGathersTheImagesAndLabelsOfItsIndices) {
  const auto data = numbered(200);
  ShardedLoader loader(data, 1, 2, 10, 4);
  const auto idx = loader.indices(0, 3);
  const Batch b = loader.batch(0, 3);
  EXPECT_EQ(b.x.sizes(), (std::vector<std::int64_t>{10, 1, 28, 28}));
  EXPECT_EQ(b.y.scalar_type(), ::torch::kInt64);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const auto i = static_cast<std::int64_t>(k);
    EXPECT_TRUE(::torch::all(b.x[i] == static_cast<float>(idx[k])).item<bool>());
    EXPECT_EQ(b.y[i].item<std::int64_t>(), idx[k] % 10);
  }
}

TEST(ShardedLoader, AnEpochVisitsDistinctSamplesAcrossWorkers) {
  const auto data = numbered(500);
  std::set<std::int64_t> seen;
  for (int r = 0; r < 4; ++r) {
    ShardedLoader loader(data, r, 4, 16, 1);
    for (std::int64_t t = 0; t < loader.steps_per_epoch(); ++t)
      for (auto i : loader.indices(0, t)) EXPECT_TRUE(seen.insert(i).second) << i;
  }
  EXPECT_EQ(seen.size(), 7u * 64u);  // floor(500/64) steps of 64
}

TEST(ShardedLoader, DifferentEpochsGiveDifferentPermutations) {
  ShardedLoader loader(numbered(1000), 0, 1, 1000, 5);
  const auto e0 = loader.indices(0, 0);
  const auto e1 = loader.indices(1, 0);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(loader.indices(0, 0), e0);  // going back to an epoch gives it again
  EXPECT_EQ(std::set<std::int64_t>(e0.begin(), e0.end()), std::set<std::int64_t>(e1.begin(), e1.end()));
}

TEST(ShardedLoader, SameSeedSameBatchesOtherSeedOtherBatches) {
  const auto data = numbered(300);
  ShardedLoader a(data, 1, 2, 32, 77), b(data, 1, 2, 32, 77), c(data, 1, 2, 32, 78);
  for (std::int64_t t = 0; t < a.steps_per_epoch(); ++t) {
    const Batch x = a.batch(3, t);
    const Batch y = b.batch(3, t);
    EXPECT_TRUE(::torch::equal(x.x, y.x));
    EXPECT_TRUE(::torch::equal(x.y, y.y));
  }
  EXPECT_NE(a.indices(0, 0), c.indices(0, 0));
}

TEST(ShardedLoader, RejectsBadArgumentsWithClearErrors) {
  const auto data = numbered(100);
  EXPECT_THROW(ShardedLoader(nullptr, 0, 1, 1, 0), InvalidArgument);
  EXPECT_THROW(ShardedLoader(data, 2, 2, 1, 0), InvalidArgument);
  EXPECT_THROW(ShardedLoader(data, -1, 2, 1, 0), InvalidArgument);
  EXPECT_THROW(ShardedLoader(data, 0, 0, 1, 0), InvalidArgument);
  EXPECT_THROW(ShardedLoader(data, 0, 1, 0, 0), InvalidArgument);
  try {
    ShardedLoader(data, 0, 4, 26, 0);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected at least workers*batch = 4*26 = 104, got 100"), std::string::npos)
        << e.what();
  }
  ShardedLoader ok(data, 0, 4, 25, 0);
  EXPECT_EQ(ok.steps_per_epoch(), 1);
  EXPECT_THROW(ok.batch(0, 1), InvalidArgument);
  EXPECT_THROW(ok.batch(0, -1), InvalidArgument);
  EXPECT_THROW(ok.batch(-1, 0), InvalidArgument);
}

}  // namespace
}  // namespace fast::torch
