#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

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

// A run whose averaged gradient stays non-finite warns of its first 3 skipped steps, then of the
// 10th, 100th, ...: 120 skipped steps give 5 warnings (it gave one per step), from worker 0 only.
TEST(AllreduceStrategy, SkippedStepsAreWarnedOfThenCountedAtPowersOfTen) {
  ::testing::internal::CaptureStderr();
  runtime::threads::World world({.size = 3});
  world.run([](Context& ctx) {
    std::vector<float> x(4, 1.0f), g(4, 1.0f);
    Worker worker(ctx, {.optimizer = {.name = "sgd", .lr = 0.5}}, {.params = x, .grads = g});
    for (int t = 0; t < 120; ++t) {
      if (ctx.rank() == 2) g[1] = std::nanf("");
      EXPECT_FALSE(worker.step().applied);
    }
    EXPECT_EQ(worker.skipped_steps(), 120);
  });
  const std::string err = ::testing::internal::GetCapturedStderr();
  int warnings = 0;
  for (std::size_t at = err.find("skipped step"); at != std::string::npos; at = err.find("skipped step", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 5) << err;
  EXPECT_NE(err.find("allreduce: worker 0 skipped step 3: the averaged gradient holds NaN or infinity (any worker's "
                     "gradient may be the cause); the next are logged at the 10th, 100th"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("skipped step 100: the averaged gradient holds NaN or infinity (any worker's gradient may be the "
                     "cause) (100 such steps so far)"),
            std::string::npos)
      << err;
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
      // The gradient checked is the average: worker 1's own was finite.
      EXPECT_NE(std::string(e.what()).find(fmt::format("allreduce: the averaged gradient worker {} applies at step 1 "
                                                       "holds NaN or infinity (any worker's gradient may be the cause)",
                                                       ctx.rank())),
                std::string::npos)
          << e.what();
    }
    for (float v : x) EXPECT_EQ(v, 1.0f);
  });
}

// A strategy that applies each worker's own gradient names it as that worker's, without blaming
// the others.
TEST(AllreduceStrategy, AStrategyOfOwnGradientsNamesTheWorkersOwnAsNonFinite) {
  runtime::threads::World world({.size = 2});
  world.run([](Context& ctx) {
    std::vector<float> x(4, 1.0f), g(4, 1.0f);
    Worker worker(ctx,
                  {.strategy = {.name = "dpsgd", .non_finite = NonFinitePolicy::error}, .optimizer = {.name = "sgd"}},
                  {.params = x, .grads = g});
    if (ctx.rank() == 1) g[0] = INFINITY;
    try {
      worker.step();
      EXPECT_EQ(ctx.rank(), 0);
    } catch (const core::InvalidArgument& e) {
      EXPECT_EQ(ctx.rank(), 1) << e.what();
      EXPECT_NE(std::string(e.what()).find(
                    "dpsgd: the gradient worker 1 applies at step 1 holds NaN or infinity; non_finite = error"),
                std::string::npos)
          << e.what();
    }
  });
}

// Through a codec whose payload cannot hold NaN (int8, sign, top-k: their encoders refuse it;
// threshold: it would drop it unseen) a worker with a non-finite gradient contributes zeros: the
// average of the others' divided by all workers is applied everywhere. Top-k keeping every element
// is exact, so the step is the closed form x - lr (1 + 1 + 0) / 3 = 1 - 0.5 x 2/3.
TEST(AllreduceStrategy, ThroughACodecANonFiniteGradientContributesNothingAndTheOthersStep) {
  for (const char* codec : {"topk:ratio=1", "int8", "sign", "threshold:value=0"}) {
    runtime::threads::World world({.size = 3});
    world.run([&](Context& ctx) {
      std::vector<float> x(10, 1.0f), g(10, 1.0f);
      Worker worker(ctx, {.strategy = {.compress = codec}, .optimizer = {.name = "sgd", .lr = 0.5}},
                    {.params = x, .grads = g});
      if (ctx.rank() == 2) g[4] = std::nanf("");
      EXPECT_TRUE(worker.step().applied) << codec;
      for (float v : x) {
        EXPECT_TRUE(std::isfinite(v)) << codec;
        EXPECT_LT(v, 1.0f) << codec;  // every worker stepped on the others' gradient
      }
      if (std::string(codec).starts_with("topk")) {
        for (float v : x) EXPECT_FLOAT_EQ(v, 1.0f - 0.5f * 2.0f / 3.0f);
      }
    });
  }
  // With non_finite = error the worker that held it throws, naming the step, after the collective.
  runtime::threads::World world({.size = 2});
  world.run([](Context& ctx) {
    std::vector<float> x(4, 1.0f), g(4, 1.0f);
    Worker worker(
        ctx, {.strategy = {.non_finite = NonFinitePolicy::error, .compress = "int8"}, .optimizer = {.name = "sgd"}},
        {.params = x, .grads = g});
    if (ctx.rank() == 0) g[0] = INFINITY;
    if (ctx.rank() == 1) {
      EXPECT_TRUE(worker.step().applied);
      return;
    }
    try {
      worker.step();
      ADD_FAILURE() << "no throw";
    } catch (const core::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("step 1 "), std::string::npos) << e.what();
    }
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

namespace fast::strategy {
namespace {

// WorkerOptions::external_optimizer: the step leaves the parameters alone and the mean of the
// workers' gradients in the gradient buffer (worker w's gradient is (w + 1) * (i + 1), so the mean
// is (n + 1) / 2 * (i + 1), exact in float32), for an optimizer outside FAST to apply.
TEST(AllreduceStrategy, ExternalOptimizerGetsTheMeanGradientAndParametersStay) {
  constexpr int kWorkers = 3;
  runtime::threads::World world({.size = kWorkers});
  world.run([](runtime::Context& ctx) {
    std::vector<float> x(9, 0.25f), g(9);
    Worker worker(
        ctx, {.strategy = {.name = "allreduce"}, .optimizer = {.name = "adam", .lr = 0.5}, .external_optimizer = true},
        {.params = x, .grads = g});
    for (int t = 0; t < 2; ++t) {
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(ctx.rank() + 1) * static_cast<float>(i + 1);
      const StepReport report = worker.step();
      EXPECT_TRUE(report.applied);
      EXPECT_EQ(report.lr, 0.0);
      for (std::size_t i = 0; i < g.size(); ++i) {
        EXPECT_EQ(g[i], (kWorkers + 1) / 2.0f * static_cast<float>(i + 1)) << "i=" << i;
        EXPECT_EQ(x[i], 0.25f);
      }
    }
  });
}

TEST(AllreduceStrategy, ExternalOptimizerIsRefusedWhereFastMustStep) {
  runtime::threads::World world({.size = 2});
  world.run([](runtime::Context& ctx) {
    std::vector<float> x(4, 0.0f), g(4, 0.0f);
    try {
      Worker w(ctx, {.strategy = {.name = "dpsgd"}, .external_optimizer = true}, {.params = x, .grads = g});
      ADD_FAILURE() << "dpsgd took an external optimizer";
    } catch (const core::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("with allreduce"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("strategy 'dpsgd'"), std::string::npos) << e.what();
    }
    try {
      Worker w(ctx,
               {.strategy = {.name = "allreduce", .compress = "topk:ratio=0.5", .dgc = true},
                .optimizer = {.name = "momentum"},
                .external_optimizer = true},
               {.params = x, .grads = g});
      ADD_FAILURE() << "dgc took an external optimizer";
    } catch (const core::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("dgc=False"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace fast::strategy
