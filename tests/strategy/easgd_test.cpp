#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error_message.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/easgd.hpp"
#include "fast/strategy/worker.hpp"
#include "paced.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using runtime::Context;

// Closed form of the elastic exchange, with zero gradients, two workers, tau = 1, serialised by
// barriers so the order is known: the centre starts at the mean c0 = (a + b) / 2 of the replicas;
// worker 1 exchanges (d1 = alpha (b - c0): x_1 = b - d1, centre c1 = c0 + d1), then worker 0
// exchanges through its Local guard (d0 = alpha (a - c1): x_0 = a - d0, centre c2 = c1 + d0).
// x_i + centre is conserved by each exchange, so x_0 + x_1 + centre stays a + b + c0.
TEST(Easgd, OneExchangeMovesWorkerAndCentreByAlphaTimesTheirGap) {
  constexpr std::size_t kDim = 12;
  constexpr double kAlpha = 0.3;
  std::vector<std::vector<float>> end(2), mid_snapshot(2);
  std::vector<float> centre_end;
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    const int r = ctx.rank();
    std::vector<float> x(kDim), g(kDim, 0.0f);
    for (std::size_t i = 0; i < kDim; ++i) x[i] = static_cast<float>(testing::centre(r, i));
    Worker worker(ctx,
                  {.strategy = {.name = "easgd", .alpha = kAlpha, .tau = 1}, .optimizer = {.name = "sgd", .lr = 0.1}},
                  {.params = x, .grads = g});
    collective::Communicator& comm = worker.communicator();
    if (r == 1) worker.step();
    comm.barrier();
    std::vector<float> snap(kDim);
    worker.snapshot(snap);  // not collective: the centre after worker 1's exchange, on both workers
    mid_snapshot[r] = snap;
    comm.barrier();
    if (r == 0) worker.step();
    worker.finish();
    std::vector<float> centre(kDim);
    worker.representative(centre);
    end[r] = x;
    if (r == 1) centre_end = centre;
    EXPECT_EQ(dynamic_cast<const EasgdStrategy&>(worker.strategy()).exchanges(), 1);
  });
  for (std::size_t i = 0; i < kDim; ++i) {
    const double a = testing::centre(0, i), b = testing::centre(1, i);
    const double c0 = (a + b) / 2;
    const double d1 = kAlpha * (b - c0);
    const double c1 = c0 + d1;
    const double d0 = kAlpha * (a - c1);
    EXPECT_NEAR(mid_snapshot[0][i], c1, 1e-5) << i;
    EXPECT_NEAR(mid_snapshot[1][i], c1, 1e-5) << i;
    EXPECT_NEAR(end[1][i], b - d1, 1e-5) << i;
    EXPECT_NEAR(end[0][i], a - d0, 1e-5) << i;
    EXPECT_NEAR(centre_end[i], c1 + d0, 1e-5) << i;
    EXPECT_NEAR(end[0][i] + end[1][i] + centre_end[i], a + b + c0, 1e-5) << i;
  }
}

// 4 workers, worker 3 a straggler: per round of the paced loop (tests/strategy/paced.hpp) workers
// 0-2 take 5 steps and worker 3 takes 4, with free interleaving inside a round; 300 rounds, so
// 1500 and 1200 steps, each worker on its own cosine schedule from lr 0.1 to 0, tau = 2,
// alpha = 0.9 / 4 (the paper's beta = 0.9). Exchanges conserve sum_i x_i + x~ and only gradients
// change it, by lr s_w (x_w - c_w) per round, so the centre tends to the optimum of the objective
// weighted by the step rates, c_s = sum_w s_w c_w / sum_w s_w (paced.hpp); the plain mean of the
// centres is 0.0526 |c_3 - c_mean| <= 0.32 further (0.14 at most here). The residual is an O(lr)
// bias: while lr is large the replicas sit lr tau / alpha of their gap away from the centre and
// the order of the exchanges within a round shifts the centre; it freezes once the remaining
// sum of lr is too small to correct it. A sequential double-precision simulation of this loop
// (workers one after the other in each round) ends 0.013 from c_s (0.033 with 60 rounds, 0.008
// with 600: about 4 / rounds); threaded runs measured 0.019, under any core pinning. Tolerance
// 0.05 for the centre, 0.06 for the replicas (which end within 3e-4 of the centre).
TEST(Easgd, CentreConvergesToTheOptimumOnTheQuadraticWithAStraggler) {
  constexpr std::size_t kDim = 16;
  constexpr double kTolerance = 0.05;
  const testing::Pacing pacing{.steps_per_round = {5, 5, 5, 4}, .rounds = 300};
  const int n = 4;
  std::vector<float> centre(kDim);
  std::vector<std::vector<float>> replicas(n);
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    const int r = ctx.rank();
    std::vector<float> x(kDim, 0.5f), g(kDim);
    Worker worker(ctx,
                  {.strategy = {.name = "easgd", .alpha = 0.9 / n, .tau = 2},
                   .optimizer = {.name = "sgd", .lr = 0.1},
                   .schedule = {.name = "cosine", .total_steps = pacing.total_steps(r)}},
                  {.params = x, .grads = g});
    testing::run_paced(worker, pacing, x, g);
    worker.finish();
    std::vector<float> out(kDim);
    worker.representative(out);
    replicas[r] = x;
    if (r == 0) centre = out;
    EXPECT_EQ(dynamic_cast<const EasgdStrategy&>(worker.strategy()).exchanges(), pacing.total_steps(r) / 2);
  });
  for (std::size_t i = 0; i < kDim; ++i) {
    const double weighted = pacing.weighted_optimum(i);
    EXPECT_NEAR(centre[i], weighted, kTolerance) << i;
    for (int w = 0; w < n; ++w)
      EXPECT_NEAR(replicas[w][i], weighted, kTolerance + 0.01) << "worker " << w << " i=" << i;
  }
}

TEST(Easgd, BadOptionsAreRejected) {
  runtime::threads::World world({.size = 1});
  world.run([](Context& ctx) {
    collective::Communicator comm(ctx);
    for (double alpha : {0.0, 1.0, 1.5, -0.1, std::numeric_limits<double>::quiet_NaN()})
      fast::testing::expect_error<core::InvalidArgument>(
          [&] { make_strategy({.name = "easgd", .alpha = alpha}, comm); }, {"easgd", "alpha", "(0, 1)", "got"});
    fast::testing::expect_error<core::InvalidArgument>([&] { make_strategy({.name = "easgd", .tau = 0}, comm); },
                                                       {"easgd", "tau", ">= 1", "got 0"});
    fast::testing::expect_error<core::InvalidArgument>([&] { make_strategy({.name = "easgd", .tau = -3}, comm); },
                                                       {"tau", "got -3"});
    EXPECT_NO_THROW(make_strategy({.name = "easgd", .alpha = 0.5, .tau = 1}, comm));
  });
}

}  // namespace
}  // namespace fast::strategy
