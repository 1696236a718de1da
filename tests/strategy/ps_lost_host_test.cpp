// ps in mode async under the sim runtime when the server's host is lost (PsStrategy, "A lost
// server"): the shard moves to the next live worker, which serves it from its own last pull with a
// fresh optimizer, and the other workers join it. Hosts fail at known instants and the gradients
// are constants, so the order in which the servers apply them is known and the test replays it in
// double precision.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/star_cluster.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/sim/world.hpp"
#include "fast/strategy/ps.hpp"
#include "fast/strategy/worker.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
// Named: the test files of this binary are compiled as one unit (unity build).
namespace ps_lost_host {

constexpr std::size_t kDim = 7;
constexpr int kSteps = 6;
constexpr int kWorkers = 3;
constexpr double kLr = 0.3;  // per-sample: each push applies kLr / kWorkers
constexpr double kMomentum = 0.5;

// Worker w's gradient, the same at every step.
double gradient(int w, std::size_t i) { return testing::centre(w + 1, i); }

// One server's momentum SGD on one coordinate (torch's: the first step's buffer is the gradient).
struct Server {
  double x = 0;
  double b = 0;
  bool first = true;
  void apply(double g) {
    b = first ? g : kMomentum * b + g;
    first = false;
    x -= kLr / kWorkers * b;
  }
};

// The final parameters and push clocks of every worker that took kSteps steps of (1 + r/10) s of
// compute with its constant gradient, then finished, under ps with `options`.
struct Finals {
  std::vector<std::vector<float>> params;
  std::vector<std::int64_t> clocks;
};
Finals run_steps(int workers, const runtime::Cluster& cluster, const WorkerOptions& options) {
  Finals out{.params = std::vector<std::vector<float>>(static_cast<std::size_t>(workers)),
             .clocks = std::vector<std::int64_t>(static_cast<std::size_t>(workers), -1)};
  runtime::sim::World world({.size = workers, .cluster = cluster, .tolerate_lost = true});
  world.run([&](runtime::Context& ctx) {
    const int r = ctx.rank();
    std::vector<float> x(kDim), g(kDim);
    for (std::size_t i = 0; i < kDim; ++i) x[i] = static_cast<float>(testing::centre(0, i));
    Worker worker(ctx, options, {.params = x, .grads = g});
    for (int s = 0; s < kSteps; ++s) {
      ctx.compute((1.0 + 0.1 * r) * 1e9);
      for (std::size_t i = 0; i < kDim; ++i) g[i] = static_cast<float>(gradient(r, i));
      worker.step();
    }
    worker.finish();
    out.params[static_cast<std::size_t>(r)] = x;
    out.clocks[static_cast<std::size_t>(r)] = dynamic_cast<const PsStrategy&>(worker.strategy()).clock();
  });
  return out;
}

// Three workers; worker r's steps take 1 + r/10 simulated seconds, so the pushes come one at a
// time: worker 0 at 1.0 and 2.0 s, worker 1 at 1.1, 2.2, 3.3, ..., worker 2 at 1.2, 2.4, 3.6, ...
// Host 0 (the server of the one shard) goes off at 2.5 s. Worker 1 last pulled after its push at
// 2.2 s, so worker 2's push at 2.4 s is lost with the old shard. At 3.3 s worker 1 finds host 0
// lost and serves the shard from its copy, with a fresh momentum buffer; at 3.6 s worker 2 joins
// it. Every later push reaches worker 1's server, and the final pull gives both the same model.
TEST(PsLostHost, WorkerOneServesTheShardFromItsLastPullAndTheOthersJoinIt) {
  runtime::Cluster cluster = fast::testing::star_cluster(kWorkers);
  cluster.failures.push_back({.host = 0, .off = 2.5});
  std::vector<std::vector<float>> finals(kWorkers);
  std::vector<std::int64_t> clocks(kWorkers, -1);
  std::vector<bool> lost(kWorkers, false);
  runtime::sim::World world({.size = kWorkers, .cluster = cluster, .tolerate_lost = true});
  world.run([&](runtime::Context& ctx) {
    const int r = ctx.rank();
    std::vector<float> x(kDim), g(kDim);
    for (std::size_t i = 0; i < kDim; ++i) x[i] = static_cast<float>(testing::centre(0, i));
    Worker worker(ctx,
                  {.strategy = {.name = "ps", .mode = "async"},
                   .optimizer = {.name = "momentum", .lr = kLr, .momentum = kMomentum}},
                  {.params = x, .grads = g});
    try {
      for (int s = 0; s < kSteps; ++s) {
        ctx.compute((1.0 + 0.1 * r) * 1e9);
        for (std::size_t i = 0; i < kDim; ++i) g[i] = static_cast<float>(gradient(r, i));
        worker.step();
      }
      worker.finish();
    } catch (const core::PeerLost&) {
      lost[static_cast<std::size_t>(r)] = true;
      throw;
    }
    finals[static_cast<std::size_t>(r)] = x;
    clocks[static_cast<std::size_t>(r)] = dynamic_cast<const PsStrategy&>(worker.strategy()).clock();
  });
  EXPECT_TRUE(lost[0]);
  ASSERT_FALSE(lost[1]);
  ASSERT_FALSE(lost[2]);
  EXPECT_EQ(clocks[1], kSteps);
  EXPECT_EQ(clocks[2], kSteps);
  for (std::size_t i = 0; i < kDim; ++i) {
    Server old{.x = testing::centre(0, i)};
    for (int w : {0, 1, 2, 0, 1}) old.apply(gradient(w, i));  // 1.0, 1.1, 1.2, 2.0, 2.2 s
    Server moved{.x = old.x};  // worker 1's last pull; worker 2's push at 2.4 s is lost with host 0
    for (int k = 3; k <= kSteps; ++k) {
      moved.apply(gradient(1, i));  // 3.3, 4.4, 5.5, 6.6 s
      moved.apply(gradient(2, i));  // 3.6, 4.8, 6.0, 7.2 s
    }
    EXPECT_NEAR(finals[1][i], moved.x, 1e-5) << i;
    EXPECT_NEAR(finals[2][i], moved.x, 1e-5) << i;
  }
}

// With lr_staleness inverse the server that takes the shard over divides each gradient's rate by
// its version lag too. Four workers, steps of 1 + r/10 s; host 0 goes off at 2.05 s, after worker
// 0's second push. The old server applied worker 0's push at 1.0 s (lag 0) and worker 1's at 1.1 s
// (lag 1, the rate itself): worker 1's pull after it is where the moved shard starts. At 2.2 s
// worker 1 serves it and pushes; workers 2 (2.4 s) and 3 (2.6 s) join it before their pushes, so
// those three pushes read the newest version (lag 0). From then on the pushes come in turn, 1, 2,
// 3, 1, ..., and each read the version before the other two workers' pushes: lag 2, half the rate.
TEST(PsLostHost, TheMovedShardDividesTheRateByTheLagWithLrStalenessInverse) {
  constexpr int kFour = 4;
  runtime::Cluster cluster = fast::testing::star_cluster(kFour);
  cluster.failures.push_back({.host = 0, .off = 2.05});
  const Finals finals = run_steps(kFour, cluster,
                                  {.strategy = {.name = "ps", .mode = "async", .lr_staleness = "inverse"},
                                   .optimizer = {.name = "sgd", .lr = kLr}});
  const double rate = kLr / kFour;  // per-sample
  for (std::size_t i = 0; i < kDim; ++i) {
    double x = testing::centre(0, i) - rate * (gradient(0, i) + gradient(1, i));  // 1.0 and 1.1 s: lag 0, 1
    const double survivors = gradient(1, i) + gradient(2, i) + gradient(3, i);
    x -= rate * survivors;                                        // 2.2, 2.4, 2.6 s: lag 0
    x -= rate / 2 * static_cast<double>(kSteps - 2) * survivors;  // 3.3 s to 7.8 s: lag 2
    for (int r = 1; r < kFour; ++r)
      EXPECT_NEAR(finals.params[static_cast<std::size_t>(r)][i], x, 1e-5) << r << " " << i;
  }
}

// The host goes off at every instant, 0.5 ms apart, of worker 1's step at about 2.2 s: before
// its push arrives, between the push's acknowledgement and its pull, and during the pull (1 ms
// of latency per message). Wherever the step breaks, worker 1 serves the shard from then on and
// counts its own pushes from its next one; both survivors take every step and end with the same
// model.
TEST(PsLostHost, AHostLostAtAnyInstantOfAStepLeavesTheSurvivorsTheSameModel) {
  for (int at = 0; at <= 40; ++at) {
    runtime::Cluster cluster = fast::testing::star_cluster(kWorkers);
    cluster.failures.push_back({.host = 0, .off = 2.2 + 0.0005 * at});
    const auto [finals, clocks] = run_steps(
        kWorkers, cluster, {.strategy = {.name = "ps", .mode = "async"}, .optimizer = {.name = "sgd", .lr = kLr}});
    EXPECT_EQ(clocks[1], kSteps) << "host 0 off at step " << at;
    EXPECT_EQ(clocks[2], kSteps) << "host 0 off at step " << at;
    EXPECT_EQ(finals[1], finals[2]) << "host 0 off at step " << at;
  }
}

}  // namespace ps_lost_host
}  // namespace fast::strategy
