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

// On the quadratic problem (quadratic.hpp) the average of the gradients is x - cbar, so
// synchronous averaging with SGD (lr eta) follows the closed form
//   x_t = cbar + (1 - eta)^t (x_0 - cbar),
// identically on every worker.

TEST(AllreduceStrategy, FollowsClosedFormOfAveragedGradientDescent) {
  constexpr std::size_t kDim = 257;
  constexpr int kSteps = 40;
  constexpr double kLr = 0.1;
  for (int n : {1, 2, 3, 4, 7}) {
    std::vector<std::vector<float>> finals(n);
    runtime::threads::World world({.size = n});
    world.run([&](Context& ctx) {
      std::vector<float> x(kDim, 0.5f), g(kDim);
      Worker worker(ctx, {.strategy = {.name = "allreduce"}, .optimizer = {.name = "sgd", .lr = kLr}},
                    {.params = x, .grads = g});
      for (int t = 0; t < kSteps; ++t) {
        for (std::size_t i = 0; i < kDim; ++i) g[i] = x[i] - static_cast<float>(centre(ctx.rank(), i));
        const StepReport report = worker.step();
        EXPECT_TRUE(report.applied);
        EXPECT_EQ(report.step, t);
      }
      finals[ctx.rank()] = x;
    });
    for (std::size_t i = 0; i < kDim; ++i) {
      double cbar = 0;
      for (int w = 0; w < n; ++w) cbar += centre(w, i) / n;
      const double expect = cbar + std::pow(1 - kLr, kSteps) * (0.5 - cbar);
      ASSERT_NEAR(finals[0][i], expect, 1e-5 * (1 + std::abs(expect))) << "n=" << n << " i=" << i;
    }
    for (int w = 1; w < n; ++w) EXPECT_EQ(finals[w], finals[0]) << "replica " << w << " diverged, n=" << n;
  }
}

TEST(AllreduceStrategy, NonFiniteGradientIsSkippedEverywhereWithoutTouchingParameters) {
  runtime::threads::World world({.size = 3});
  world.run([](Context& ctx) {
    std::vector<float> x(10, 1.0f), g(10);
    Worker worker(ctx, {.optimizer = {.name = "sgd", .lr = 0.5}}, {.params = x, .grads = g});
    std::fill(g.begin(), g.end(), 1.0f);
    if (ctx.rank() == 2) g[4] = std::nanf("");
    const StepReport bad = worker.step();
    EXPECT_FALSE(bad.applied);
    for (float v : x) EXPECT_EQ(v, 1.0f);
    std::fill(g.begin(), g.end(), 1.0f);
    EXPECT_TRUE(worker.step().applied);
    for (float v : x) EXPECT_FLOAT_EQ(v, 0.5f);
    EXPECT_EQ(worker.skipped_steps(), 1);
    EXPECT_EQ(worker.steps(), 2);
  });
}

TEST(AllreduceStrategy, NonFiniteGradientWithErrorPolicyThrowsNamingTheStep) {
  runtime::threads::World world({.size = 2});
  world.run([](Context& ctx) {
    std::vector<float> x(4, 1.0f), g(4, 1.0f);
    Worker worker(ctx, {.strategy = {.non_finite = NonFinitePolicy::error}, .optimizer = {.name = "sgd"}},
                  {.params = x, .grads = g});
    if (ctx.rank() == 0) g[0] = INFINITY;
    try {
      worker.step();
      ADD_FAILURE() << "no throw";
    } catch (const core::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("step 0"), std::string::npos) << e.what();
    }
    for (float v : x) EXPECT_EQ(v, 1.0f);
  });
}

TEST(StrategyRegistry, UnknownNameListsAllowedNames) {
  runtime::threads::World world({.size = 1});
  world.run([](Context& ctx) {
    collective::Communicator comm(ctx);
    try {
      make_strategy({.name = "telepathy"}, comm);
      ADD_FAILURE() << "no throw";
    } catch (const core::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("expected one of: allreduce"), std::string::npos) << e.what();
    }
  });
}

TEST(StrategyRegistry, MismatchedParamsAndGradsAreRejected) {
  runtime::threads::World world({.size = 1});
  world.run([](Context& ctx) {
    std::vector<float> x(4), g(5);
    EXPECT_THROW(Worker(ctx, {}, {.params = x, .grads = g}), core::InvalidArgument);
  });
}

}  // namespace
}  // namespace fast::strategy
