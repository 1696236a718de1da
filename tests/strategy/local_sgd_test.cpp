#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/worker.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using runtime::Context;
using testing::centre;
using testing::mean_centre;

// On the quadratic problem each worker's local SGD from a common point x is
//   x_w(k) = c_w + (1 - eta)^k (x - c_w),
// so the average after `period` steps is cbar + (1 - eta)^period (x - cbar): at every averaging
// step t the replicas equal cbar + (1 - eta)^t (x_0 - cbar), as synchronous SGD would.
TEST(LocalSgd, AveragingStepsFollowTheClosedFormAndReplicasDriftBetween) {
  constexpr std::size_t kDim = 101;
  constexpr double kLr = 0.05;
  for (int n : {2, 3, 5}) {
    for (std::int64_t period : {1, 4}) {
      runtime::threads::World world({.size = n});
      world.run([&](Context& ctx) {
        std::vector<float> x(kDim, 0.25f), g(kDim);
        // The ring, whose bytes the closed form below counts (auto would pick recursive doubling).
        Worker worker(ctx,
                      {.strategy = {.name = "local-sgd", .period = period},
                       .optimizer = {.name = "sgd", .lr = kLr},
                       .communicator = {.allreduce_algorithm = collective::AllreduceAlgorithm::ring}},
                      {.params = x, .grads = g});
        for (int t = 1; t <= 24; ++t) {
          testing::gradient(ctx.rank(), x, g);
          worker.step();
          if (t % period != 0) {
            EXPECT_NE(x[0], static_cast<float>(mean_centre(n, 0) + std::pow(1 - kLr, t) * (0.25 - mean_centre(n, 0))));
            continue;
          }
          for (std::size_t i = 0; i < kDim; ++i) {
            const double expect = mean_centre(n, i) + std::pow(1 - kLr, t) * (0.25 - mean_centre(n, i));
            ASSERT_NEAR(x[i], expect, 2e-5 * (1 + std::abs(expect))) << "n=" << n << " period=" << period << " t=" << t;
          }
        }
        // Communication: 24 / period all-reduces of the parameters; over the world a ring all-reduce
        // sends 2 (n - 1) |x| floats.
        std::vector<double> bytes{static_cast<double>(ctx.bytes_sent())};
        worker.communicator().allreduce(core::MutableView(std::span<double>(bytes)));
        EXPECT_EQ(bytes[0], static_cast<double>((24 / period) * 2 * (n - 1) * kDim * 4));
      });
    }
  }
}

TEST(LocalSgd, SyncWarmupAveragesGradientsFirst) {
  runtime::threads::World world({.size = 3});
  world.run([](Context& ctx) {
    std::vector<float> x(10, 1.0f), g(10);
    Worker worker(
        ctx,
        {.strategy = {.name = "local-sgd", .period = 1000, .sync_warmup = 5}, .optimizer = {.name = "sgd", .lr = 0.1}},
        {.params = x, .grads = g});
    for (int t = 0; t < 5; ++t) {
      testing::gradient(ctx.rank(), x, g);
      worker.step();
    }
    // After the synchronous warm-up every replica is the same, the closed form of averaged SGD.
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double expect = mean_centre(3, i) + std::pow(0.9, 5) * (1.0 - mean_centre(3, i));
      EXPECT_NEAR(x[i], expect, 1e-5);
    }
  });
}

TEST(LocalSgd, BadPeriodIsRejected) {
  runtime::threads::World world({.size = 1});
  world.run([](Context& ctx) {
    std::vector<float> x(2), g(2);
    EXPECT_THROW(Worker(ctx, {.strategy = {.name = "local-sgd", .period = 0}}, {.params = x, .grads = g}),
                 core::InvalidArgument);
  });
}

}  // namespace
}  // namespace fast::strategy
