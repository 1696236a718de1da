#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

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

// The straggle flags of one worker, one per after_compute with zero compute time (no waiting).
std::string flags(Context& ctx, const SlowdownOptions& options, int rank, int workers, int steps) {
  Slowdown slow(options, rank, workers);
  std::string out;
  for (int i = 0; i < steps; ++i) {
    const std::int64_t before = slow.straggled_steps();
    slow.after_compute(ctx, 0.0);
    out += slow.straggled_steps() > before ? '1' : '0';
  }
  return out;
}

// The draws follow the rule in slowdown.hpp exactly: flags computed independently (a Python
// transcription of SplitMix64, derive_seed and uniform01 from the published algorithm and the
// formulas of fast/core/random.hpp) for seed 7, p = 0.2, ranks 0 and 1.
TEST(Slowdown, StragglerDrawsFollowTheDocumentedRule) {
  threads::World world({.size = 1});
  world.run([](Context& ctx) {
    const SlowdownOptions o{.straggler_probability = 0.2, .straggler_factor = 2.0, .seed = 7};
    EXPECT_EQ(flags(ctx, o, 0, 2, 40), "1000000000101000100001000001010011100100");
    EXPECT_EQ(flags(ctx, o, 1, 2, 40), "0000101000001010000011000100000111011011");
    EXPECT_EQ(flags(ctx, o, 1, 2, 40), flags(ctx, o, 1, 2, 40));
    EXPECT_NE(flags(ctx, {.straggler_probability = 0.2, .straggler_factor = 2.0, .seed = 8}, 0, 2, 40),
              flags(ctx, o, 0, 2, 40));
  });
}

// Independent Bernoulli(p) draws per step: the gaps between straggling steps are geometric,
// P(gap >= g) = (1 - p)^(g - 1). Over 200000 steps (about 40000 gaps at p = 0.2) the fraction of gaps
// >= 1, 2, 5, 10 is within 5 binomial standard errors sqrt(q (1 - q) / gaps) of (1 - p)^(g - 1), and
// the straggling fraction within 5 standard errors of p; fixed seeds, so deterministic.
TEST(Slowdown, StragglerGapsAreGeometric) {
  threads::World world({.size = 1});
  world.run([](Context& ctx) {
    constexpr int kSteps = 200000;
    constexpr double kP = 0.2;
    for (int rank : {0, 3}) {
      const std::string f =
          flags(ctx, {.straggler_probability = kP, .straggler_factor = 3.0, .seed = 41}, rank, 4, kSteps);
      std::vector<int> gaps;
      int last = -1;
      for (int i = 0; i < kSteps; ++i)
        if (f[static_cast<std::size_t>(i)] == '1') {
          if (last >= 0) gaps.push_back(i - last);
          last = i;
        }
      const double hits = static_cast<double>(gaps.size() + 1);
      EXPECT_NEAR(hits / kSteps, kP, 5 * std::sqrt(kP * (1 - kP) / kSteps)) << "rank " << rank;
      for (int g : {1, 2, 5, 10}) {
        const double q = std::pow(1 - kP, g - 1);
        const auto at_least =
            static_cast<double>(std::count_if(gaps.begin(), gaps.end(), [&](int x) { return x >= g; }));
        const auto n = static_cast<double>(gaps.size());
        EXPECT_NEAR(at_least / n, q, 5 * std::sqrt(q * (1 - q) / n) + 1e-12) << "rank " << rank << ", gap >= " << g;
      }
    }
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
