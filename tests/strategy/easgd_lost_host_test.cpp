// easgd under the sim runtime when the centre's host is lost (EasgdStrategy, "On a lost peer"):
// without a codec every worker keeps a copy of the centre, and the lowest live worker's copy
// becomes the centre. Hosts fail at known instants, so the order of the exchanges is known and
// the test replays it in double precision.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/star_cluster.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/sim/world.hpp"
#include "fast/strategy/easgd.hpp"
#include "fast/strategy/worker.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
// Named: the test files of this binary are compiled as one unit (unity build).
namespace easgd_lost_host {

constexpr std::size_t kDim = 9;
constexpr int kSteps = 6;
constexpr double kAlpha = 0.25;

// One elastic exchange of replica x with centre c (EasgdStrategy::exchange): both move by d.
void exchange(double& x, double& c) {
  const double d = kAlpha * (x - c);
  x -= d;
  c += d;
}

// Three workers, tau = 1 and zero gradients, so only the exchanges move the replicas. Worker r's
// steps take 1 + r/10 simulated seconds, so the exchanges come one at a time (each a few ms of
// messages): worker 0 at 1.0 and 2.0 s, worker 1 at 1.1, 2.2, 3.3, ..., worker 2 at 1.2, 2.4,
// 3.6, ... Host 0 goes off at 2.5 s. Worker 1's copy is the centre as its exchange at 2.2 s left
// it, so the d of worker 2's exchange at 2.4 s is lost with the old centre. At 3.3 s worker 1's
// get fails: it holds the centre from then on and exchanges under its own guard; at 3.6 s worker
// 2's get fails and it moves to worker 1. The representative is worker 1's centre.
TEST(EasgdLostHost, WorkerOneHoldsTheCentreFromItsCopyAndTheOthersMoveToIt) {
  runtime::Cluster cluster = fast::testing::star_cluster(3);
  cluster.failures.push_back({.host = 0, .off = 2.5});
  std::vector<std::vector<float>> finals(3), centres(3);
  std::vector<std::int64_t> exchanges(3, -1);
  std::vector<bool> lost(3, false);
  runtime::sim::World world({.size = 3, .cluster = cluster, .tolerate_lost = true});
  world.run([&](runtime::Context& ctx) {
    const auto r = static_cast<std::size_t>(ctx.rank());
    std::vector<float> x(kDim), g(kDim, 0.0f);
    for (std::size_t i = 0; i < kDim; ++i) x[i] = static_cast<float>(testing::centre(ctx.rank(), i));
    Worker worker(ctx,
                  {.strategy = {.name = "easgd", .alpha = kAlpha, .tau = 1}, .optimizer = {.name = "sgd", .lr = 0.1}},
                  {.params = x, .grads = g});
    try {
      for (int s = 0; s < kSteps; ++s) {
        ctx.compute((1.0 + 0.1 * static_cast<double>(r)) * 1e9);
        worker.step();
      }
      worker.finish();
    } catch (const core::PeerLost&) {
      lost[r] = true;
      throw;
    }
    std::vector<float> c(kDim);
    worker.representative(c);
    finals[r] = x;
    centres[r] = c;
    exchanges[r] = dynamic_cast<const EasgdStrategy&>(worker.strategy()).exchanges();
  });
  EXPECT_TRUE(lost[0]);
  ASSERT_FALSE(lost[1]);
  ASSERT_FALSE(lost[2]);
  EXPECT_EQ(exchanges[1], kSteps);
  EXPECT_EQ(exchanges[2], kSteps);
  for (std::size_t i = 0; i < kDim; ++i) {
    double x0 = testing::centre(0, i), x1 = testing::centre(1, i), x2 = testing::centre(2, i);
    double c = (x0 + x1 + x2) / 3;
    exchange(x0, c);  // 1.0 s
    exchange(x1, c);  // 1.1 s
    exchange(x2, c);  // 1.2 s
    exchange(x0, c);  // 2.0 s
    exchange(x1, c);  // 2.2 s
    double copy = c;  // worker 1's copy: the centre as its exchange left it
    exchange(x2, c);  // 2.4 s, on the centre that is lost at 2.5 s
    for (int k = 3; k <= kSteps; ++k) {
      exchange(x1, copy);  // 3.3, 4.4, 5.5, 6.6 s
      exchange(x2, copy);  // 3.6, 4.8, 6.0, 7.2 s
    }
    EXPECT_NEAR(finals[1][i], x1, 1e-5) << i;
    EXPECT_NEAR(finals[2][i], x2, 1e-5) << i;
    EXPECT_NEAR(centres[1][i], copy, 1e-5) << i;
    EXPECT_NEAR(centres[2][i], copy, 1e-5) << i;
  }
}

}  // namespace easgd_lost_host
}  // namespace fast::strategy
