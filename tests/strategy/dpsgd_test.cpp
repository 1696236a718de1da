#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fast/core/error.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/dpsgd.hpp"
#include "fast/strategy/worker.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/mixing.hpp"
#include "fast/topology/spectral.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using runtime::Context;

// Per coordinate: the mean over replicas and the sum of squared distances to it.
struct Spread {
  std::vector<double> mean;
  double consensus = 0;
};
Spread spread(const std::vector<std::vector<float>>& replicas) {
  const std::size_t dim = replicas[0].size();
  Spread s{std::vector<double>(dim, 0.0), 0.0};
  for (const auto& r : replicas)
    for (std::size_t i = 0; i < dim; ++i) s.mean[i] += r[i] / static_cast<double>(replicas.size());
  for (const auto& r : replicas)
    for (std::size_t i = 0; i < dim; ++i) s.consensus += (r[i] - s.mean[i]) * (r[i] - s.mean[i]);
  return s;
}

// With zero gradients dpsgd is pure gossip x <- W x: W doubly stochastic keeps the average, and W
// symmetric contracts the distance to it by at least lambda_2^2 per step (lambda_2 from Eigen).
TEST(Dpsgd, GossipKeepsTheAverageAndContractsAtTheSpectralRate) {
  constexpr std::size_t kDim = 64;
  constexpr int kSteps = 10;
  for (const char* spec : {"ring", "torus2d:2x3", "complete", "star", "random-regular:3"}) {
    const int n = 6;
    std::vector<std::vector<float>> start(n), end(n);
    runtime::threads::World world({.size = n});
    world.run([&](Context& ctx) {
      std::vector<float> x(kDim), g(kDim, 0.0f);
      for (std::size_t i = 0; i < kDim; ++i) x[i] = static_cast<float>(testing::centre(ctx.rank(), i));
      start[ctx.rank()] = x;
      Worker worker(ctx, {.strategy = {.name = "dpsgd", .topology = spec, .seed = 4}, .optimizer = {.name = "sgd"}},
                    {.params = x, .grads = g});
      for (int t = 0; t < kSteps; ++t) worker.step();
      end[ctx.rank()] = x;
    });
    const Spread before = spread(start), after = spread(end);
    for (std::size_t i = 0; i < kDim; ++i) EXPECT_NEAR(after.mean[i], before.mean[i], 1e-5) << spec << " i=" << i;
    const double lambda2 =
        topology::second_eigenvalue_modulus(topology::metropolis_hastings(topology::make_topology(spec, n, 4)));
    EXPECT_LE(after.consensus, std::pow(lambda2, 2 * kSteps) * before.consensus * (1 + 1e-4) + 1e-9) << spec;
    EXPECT_LT(after.consensus, before.consensus) << spec;
  }
}

// With the quadratic problem the gradients are linear, so the average of the replicas follows
// synchronous SGD exactly: xbar_t = cbar + (1 - eta)^t (x_0 - cbar); the replicas stay within a
// band around it.
TEST(Dpsgd, AverageFollowsSynchronousSgdOnTheQuadratic) {
  constexpr std::size_t kDim = 33;
  constexpr double kLr = 0.05;
  constexpr int kSteps = 60;
  const int n = 5;
  std::vector<std::vector<float>> end(n);
  runtime::threads::World world({.size = n});
  world.run([&](Context& ctx) {
    std::vector<float> x(kDim, 0.5f), g(kDim);
    Worker worker(ctx, {.strategy = {.name = "dpsgd", .topology = "ring"}, .optimizer = {.name = "sgd", .lr = kLr}},
                  {.params = x, .grads = g});
    for (int t = 0; t < kSteps; ++t) {
      testing::gradient(ctx.rank(), x, g);
      worker.step();
    }
    end[ctx.rank()] = x;
    // Each step sends the parameters to the 2 ring neighbours.
    EXPECT_EQ(ctx.bytes_sent(), static_cast<std::uint64_t>(kSteps) * 2 * kDim * 4);
  });
  const Spread s = spread(end);
  for (std::size_t i = 0; i < kDim; ++i) {
    const double cbar = testing::mean_centre(n, i);
    EXPECT_NEAR(s.mean[i], cbar + std::pow(1 - kLr, kSteps) * (0.5 - cbar), 1e-4) << i;
  }
}

// Where the optimizer takes the gradient first (momentum), the gossip sums the neighbours' models in
// the gradient's storage: after a step it holds their sum; the parameters are the closed form of
// the first momentum step on the mixed model. With nesterov, which reads the gradient after the
// gossip, the gradient is left as it was. Ring of 3: every worker's in-neighbours are the other
// two, Metropolis-Hastings weights 1/3; x_r = r + 1 and g_r = (r + 1) / 10 everywhere.
TEST(Dpsgd, WhereTheOptimizerTakesTheGradientFirstTheSumLiesInTheGradient) {
  constexpr std::size_t kDim = 17;
  constexpr double kLr = 0.5;
  for (const char* rule : {"momentum", "nesterov"}) {
    const bool taken = std::string(rule) == "momentum";
    const int n = 3;
    std::vector<std::vector<float>> xs(n), gs(n);
    runtime::threads::World world({.size = n});
    world.run([&](Context& ctx) {
      const auto r = static_cast<float>(ctx.rank() + 1);
      std::vector<float> x(kDim, r), g(kDim, r / 10);
      Worker worker(ctx, {.strategy = {.name = "dpsgd", .topology = "ring"}, .optimizer = {.name = rule, .lr = kLr}},
                    {.params = x, .grads = g});
      worker.step();
      xs[ctx.rank()] = x;
      gs[ctx.rank()] = g;
    });
    for (int r = 0; r < n; ++r) {
      const double own = r + 1.0;
      const double g = own / 10;
      // First step: momentum's buffer is the gradient, so the step is -lr g; nesterov's is -lr (g + mu g).
      const double step = taken ? kLr * g : kLr * (g + 0.9 * g);
      for (std::size_t i = 0; i < kDim; ++i) {
        EXPECT_NEAR(xs[r][i], 2.0 - step, 1e-6) << rule << " worker " << r;  // the mean of 1, 2, 3
        EXPECT_FLOAT_EQ(gs[r][i], taken ? static_cast<float>(6.0 - own) : static_cast<float>(own) / 10)
            << rule << " worker " << r;
      }
    }
  }
}

// A gossip that fails after the optimizer took the gradient (here: worker 1 never steps, so worker
// 0's receive times out) leaves worker 0 partway through its step: stepping or saving again is
// refused, naming why, where it would otherwise take a second gradient into the momentum. A
// restore() of a checkpoint from before the failure puts a whole state back.
TEST(Dpsgd, AStepThatFailedAfterTakingTheGradientRefusesToStepOrSaveAgain) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 0.3});
  world.run([&](Context& ctx) {
    std::vector<float> x(8, 1.0f), g(8, 0.5f);
    Worker worker(ctx, {.strategy = {.name = "dpsgd", .topology = "ring"}, .optimizer = {.name = "momentum"}},
                  {.params = x, .grads = g});
    if (ctx.rank() == 1) return;
    const Checkpoint before = worker.save();
    EXPECT_ANY_THROW(worker.step());
    for (const char* call : {"step", "save"}) {
      try {
        if (std::string(call) == "step")
          worker.step();
        else
          (void)worker.save();
        ADD_FAILURE() << call << ": no throw";
      } catch (const core::InvalidUsage& e) {
        EXPECT_NE(std::string(e.what()).find("partway through that step"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(std::string("Worker::") + call), std::string::npos) << e.what();
      }
    }
    worker.restore(before, "the checkpoint before the failure");
    EXPECT_NO_THROW((void)worker.save());
  });
}

TEST(Dpsgd, DirectedOrUnknownTopologiesAreRejected) {
  runtime::threads::World world({.size = 4});
  world.run([](Context& ctx) {
    std::vector<float> x(2), g(2);
    try {
      Worker(ctx, {.strategy = {.name = "dpsgd", .topology = "exponential"}}, {.params = x, .grads = g});
      ADD_FAILURE() << "no throw";
    } catch (const core::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("directed"), std::string::npos) << e.what();
    }
    EXPECT_THROW(Worker(ctx, {.strategy = {.name = "dpsgd", .topology = "moebius"}}, {.params = x, .grads = g}),
                 core::InvalidArgument);
  });
}

}  // namespace
}  // namespace fast::strategy
