#include <gtest/gtest.h>

#include <cmath>

#include "fast/runtime/slowdown.hpp"
#include "fast/runtime/threads/world.hpp"

namespace fast::runtime {
namespace {

TEST(Slowdown, FixedFactorWaitsFactorMinusOneTimesComputeThroughTheContext) {
  threads::World world({.size = 3});
  world.run([](Context& ctx) {
    Slowdown slow({.factors = {1.0, 3.0, 1.5}}, ctx.rank(), ctx.size());
    const double expected_factor = ctx.rank() == 0 ? 1.0 : ctx.rank() == 1 ? 3.0 : 1.5;
    EXPECT_EQ(slow.active(), ctx.rank() != 0);
    const double t0 = ctx.now();
    double waited = 0;
    for (int i = 0; i < 5; ++i) waited += slow.after_compute(ctx, 0.004);
    EXPECT_DOUBLE_EQ(waited, 5 * (expected_factor - 1.0) * 0.004);
    EXPECT_DOUBLE_EQ(slow.waited_seconds(), waited);
    EXPECT_GE(ctx.now() - t0, waited);  // the time passed on the runtime's clock
    EXPECT_EQ(slow.straggled_steps(), 0);
  });
}

TEST(Slowdown, RandomStragglersFollowTheirProbabilityReproducibly) {
  threads::World world({.size = 2});
  world.run([](Context& ctx) {
    constexpr int kSteps = 4000;
    constexpr double kP = 0.2;
    auto count = [&](std::uint64_t seed) {
      Slowdown slow({.straggler_probability = kP, .straggler_factor = 2.0, .seed = seed}, ctx.rank(), ctx.size());
      for (int i = 0; i < kSteps; ++i) slow.after_compute(ctx, 0.0);  // zero compute: no real waiting
      return slow.straggled_steps();
    };
    const std::int64_t a = count(7);
    EXPECT_EQ(a, count(7));  // same seed, same rank: same draws
    // Binomial(4000, 0.2): mean 800, sigma ~25.3; 5 sigma bounds.
    EXPECT_NEAR(static_cast<double>(a), kSteps * kP, 5 * std::sqrt(kSteps * kP * (1 - kP)));
  });
}

TEST(Slowdown, BadOptionsAreRejectedNamingThem) {
  auto message = [](const SlowdownOptions& o, int rank, int workers) -> std::string {
    try {
      Slowdown s(o, rank, workers);
    } catch (const core::InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({.factors = {1, 2}}, 0, 3).find("expected one factor per worker (3), got 2"), std::string::npos);
  EXPECT_NE(message({.factors = {1, 0.5}}, 0, 2).find("factor of worker 1 must be >= 1, got 0.5"), std::string::npos);
  EXPECT_NE(message({.straggler_probability = 1.5}, 0, 1).find("straggler_probability"), std::string::npos);
  EXPECT_NE(message({.straggler_factor = 0.9}, 0, 1).find("straggler_factor"), std::string::npos);
}

}  // namespace
}  // namespace fast::runtime
