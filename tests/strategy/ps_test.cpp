#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error_message.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/ps.hpp"
#include "fast/strategy/worker.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using runtime::Context;
using testing::centre;
using testing::mean_centre;

const PsStrategy& ps_of(const Worker& worker) { return dynamic_cast<const PsStrategy&>(worker.strategy()); }

// lr_semantics per-gradient: the server applies every gradient with `lr` itself, the rate the
// bounds below are written with (AsyncAndSspInTurnsReplayExactly checks both semantics).
WorkerOptions ps_options(const char* mode, std::int64_t servers, double lr, std::int64_t staleness = 2,
                         const char* lr_semantics = "per-gradient", const char* lr_staleness = "none") {
  return {.strategy = {.name = "ps",
                       .mode = mode,
                       .staleness = staleness,
                       .servers = servers,
                       .lr_semantics = lr_semantics,
                       .lr_staleness = lr_staleness},
          .optimizer = {.name = "sgd", .lr = lr}};
}

// What every worker saw, gathered after the run.
struct PsRun {
  std::vector<std::vector<float>> finals;  // per worker, after finish()
  StalenessStats staleness;                // merged over the servers
  std::int64_t max_clock_lag = 0;          // over the servers
  std::int64_t steps = 0;                  // over the workers
  int spread = 0;                          // largest observed gap between workers' completed steps
};

// n workers on the quadratic from x0, worker w taking steps(w) steps and sleeping sleep(w, t)
// seconds before step t. `turns` (round-robin) passes a token so that the workers step one after
// the other: 0, 1, ..., n-1, 0, 1, ...
template <typename Steps, typename Sleep>
// turns: the workers step one after another; pace > 0: all workers meet at a barrier (outside
// step()) every `pace` steps, which bounds how far the OS scheduler can let one run ahead.
PsRun run_quadratic(int n, const WorkerOptions& options, std::size_t dim, float x0, Steps steps, Sleep sleep,
                    bool turns = false, int pace = 0) {
  PsRun run;
  const auto un = static_cast<std::size_t>(n);
  run.finals.resize(un);
  std::vector<StalenessStats> stats(un);
  std::vector<std::int64_t> lags(un), counts(un);
  std::vector<std::atomic<int>> done(un);
  std::atomic<int> spread{0};
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    const int r = ctx.rank();
    const auto ur = static_cast<std::size_t>(r);
    const runtime::Tag token = runtime::make_tag(runtime::TagKind::user, 1, 0);
    std::int64_t tok = 0;
    const core::MutableView tok_view(std::span<std::int64_t>(&tok, 1));
    std::vector<float> x(dim, x0), g(dim);
    Worker worker(ctx, options, {.params = x, .grads = g});
    const int t_end = steps(r);
    worker.communicator().barrier();  // start together: thread start-up would skew the first steps
    for (int t = 0; t < t_end; ++t) {
      if (turns && (r != 0 || t != 0)) ctx.recv((r + n - 1) % n, token, tok_view).wait();
      ctx.sleep(sleep(r, t));
      testing::gradient(r, x, g);
      worker.step();
      if (turns && (r != n - 1 || t != t_end - 1)) ctx.send((r + 1) % n, token, tok_view).wait();
      if (pace > 0 && (t + 1) % pace == 0) worker.communicator().barrier();
      // The gap between the most and the least advanced worker, as this worker sees it.
      done[ur].fetch_add(1);
      int lo = done[0].load(), hi = lo;
      for (std::size_t w = 1; w < un; ++w) {
        lo = std::min(lo, done[w].load());
        hi = std::max(hi, done[w].load());
      }
      int seen = spread.load();
      while (hi - lo > seen && !spread.compare_exchange_weak(seen, hi - lo)) {
      }
    }
    worker.finish();
    run.finals[ur] = x;
    stats[ur] = worker.strategy().staleness();
    lags[ur] = ps_of(worker).max_clock_lag();
    counts[ur] = worker.steps();
  });
  for (std::size_t w = 0; w < un; ++w) {
    run.staleness.merge(stats[w]);
    run.max_clock_lag = std::max(run.max_clock_lag, lags[w]);
    run.steps += counts[w];
  }
  run.spread = spread.load();
  return run;
}

auto steps_of(int t) {
  return [t](int) { return t; };
}
double no_sleep(int, int) { return 0; }

// --- sync --------------------------------------------------------------------------------------

// sync averages the N gradients and applies one optimizer step per round, which is what
// allreduce does with the same optimizer: the trajectories agree up to the float rounding of the
// two averaging orders (a few ulps per step; 1e-6 relative leaves a wide margin over 20 steps).
TEST(Ps, SyncFollowsTheAllreduceTrajectory) {
  constexpr int kN = 4;
  constexpr std::size_t kDim = 37;
  constexpr int kSteps = 20;
  for (const char* opt : {"sgd", "momentum"}) {
    auto trajectory = [&](const StrategyOptions& strategy) {
      std::vector<std::vector<std::vector<float>>> traj(kN);  // [worker][step] -> params
      runtime::threads::World world({.size = kN, .op_timeout_seconds = 60});
      world.run([&](Context& ctx) {
        std::vector<float> x(kDim, 0.5f), g(kDim);
        Worker worker(ctx, {.strategy = strategy, .optimizer = {.name = opt, .lr = 0.05, .momentum = 0.9}},
                      {.params = x, .grads = g});
        for (int t = 0; t < kSteps; ++t) {
          testing::gradient(ctx.rank(), x, g);
          EXPECT_TRUE(worker.step().applied);
          traj[static_cast<std::size_t>(ctx.rank())].push_back(x);
        }
        worker.finish();
      });
      return traj;
    };
    const auto reference = trajectory({.name = "allreduce"});
    for (std::int64_t k : {1, 2}) {
      const auto ps = trajectory({.name = "ps", .mode = "sync", .servers = k});
      for (int t = 0; t < kSteps; ++t) {
        const std::vector<float>& want = reference[0][static_cast<std::size_t>(t)];
        double diff = 0, norm = 0;
        for (std::size_t i = 0; i < kDim; ++i) {
          diff += std::pow(ps[0][static_cast<std::size_t>(t)][i] - want[i], 2);
          norm += std::pow(want[i], 2);
        }
        EXPECT_LE(std::sqrt(diff), 1e-6 * std::sqrt(norm)) << opt << " K=" << k << " step " << t;
        for (int w = 1; w < kN; ++w)
          EXPECT_EQ(ps[static_cast<std::size_t>(w)][static_cast<std::size_t>(t)], ps[0][static_cast<std::size_t>(t)])
              << "replica " << w << " differs, " << opt << " K=" << k << " step " << t;
      }
    }
  }
}

// The server sums a round's gradients in rank order whatever order they arrive in, and passes a
// worker that finished. Gradients whose f64 sum depends on the order (1e20 + 1 == 1e20): round 1,
// pushed from the highest rank down, 1e20, 1, -1e20, 1 sum to 1 in rank order (0 in arrival
// order); round 2 without worker 3 (done after round 1), 1e20, -1e20, 1 from the highest rank down
// sum to 1 (0 in arrival order). sgd at lr 1: x = 0.5 - 1/4, then - 1/3.
TEST(Ps, SyncSumsInRankOrderWhateverTheArrivalAndPassesAFinishedWorker) {
  constexpr int kN = 4;
  const std::array<std::array<float, kN>, 2> grads{{{1e20f, 1.0f, -1e20f, 1.0f}, {1e20f, -1e20f, 1.0f, 0.0f}}};
  std::vector<float> final(kN);
  runtime::threads::World world({.size = kN, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    const int r = ctx.rank();
    std::vector<float> x(1, 0.5f), g(1);
    Worker worker(ctx, {.strategy = {.name = "ps", .mode = "sync"}, .optimizer = {.name = "sgd", .lr = 1.0}},
                  {.params = x, .grads = g});
    for (int t = 0; t < (r == kN - 1 ? 1 : 2); ++t) {
      const int pushing = t == 0 ? kN : kN - 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(60 * (pushing - 1 - r)));  // the highest rank first
      g[0] = grads[static_cast<std::size_t>(t)][static_cast<std::size_t>(r)];
      EXPECT_TRUE(worker.step().applied);
      EXPECT_NEAR(x[0], t == 0 ? 0.25 : 0.25 - 1.0 / 3, 1e-6) << "worker " << r << " round " << t;
    }
    worker.finish();
    final[static_cast<std::size_t>(r)] = x[0];
  });
  for (int r = 0; r < kN; ++r) EXPECT_NEAR(final[static_cast<std::size_t>(r)], 0.25 - 1.0 / 3, 1e-6) << r;
}

// An asynchronous run's workers step at their own pace: representative() before finish() is
// refused (a worker that read the model and left would leave the others waiting on its server),
// and a worker whose server's host left without finish() gets TimeoutError at the operation time
// limit instead of waiting for ever.
TEST(Ps, AsynchronousModelReadBeforeFinishIsRefusedAndAGoneServerTimesOut) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 1});
  try {
    world.run([](Context& ctx) {
      std::vector<float> x(8, 0.5f), g(8), out(8);
      Worker worker(ctx, ps_options("async", 2, 0.1), {.params = x, .grads = g});
      testing::gradient(ctx.rank(), x, g);
      worker.step();
      fast::testing::expect_error<core::InvalidUsage>(
          [&] { worker.representative(out); },
          {"Worker::representative: strategy 'ps' is asynchronous: call finish() first"});
      if (ctx.rank() == 0) return;  // leaves without finish(): its shard's server goes with it
      for (int t = 0; t < 1000; ++t) {
        testing::gradient(ctx.rank(), x, g);
        worker.step();
      }
    });
    ADD_FAILURE() << "the worker whose server left went on";
  } catch (const core::TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("did not complete within 1 s"), std::string::npos) << e.what();
  }
}

// In mode sync the replicas are identical and the representative is the worker's own parameters,
// read in place (the evaluator then copies nothing): the span is params itself and holds what the
// collective representative() writes, mid-run and after finish().
TEST(Ps, SyncRepresentativeIsReadInPlaceFromTheWorkersParameters) {
  constexpr int kN = 3;
  constexpr std::size_t kDim = 11;
  runtime::threads::World world({.size = kN, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    std::vector<float> x(kDim, 0.5f), g(kDim), copy(kDim);
    Worker worker(ctx, ps_options("sync", 2, 0.1), {.params = x, .grads = g});
    for (int t = 0; t < 3; ++t) {
      testing::gradient(ctx.rank(), x, g);
      worker.step();
    }
    for (bool finished : {false, true}) {
      if (finished) worker.finish();
      EXPECT_TRUE(worker.strategy().replicas_identical());
      const std::span<const float> in_place = worker.representative_in_place();
      EXPECT_EQ(in_place.data(), x.data());
      EXPECT_EQ(in_place.size(), kDim);
      worker.representative(copy);
      EXPECT_EQ(copy, x) << (finished ? "after finish()" : "mid-run");
    }
  });
}

// Averaged gradient descent on the quadratic: x_t = cbar + (1 - eta)^t (x_0 - cbar). With
// eta = 0.2 and 60 steps, 0.8^60 < 2e-6: the servers reach the optimum to float precision.
// Every shard records each round's N gradients with lag 0.
// Two parameters on four servers: shards 2 and 3 are empty and still take part.
TEST(Ps, SyncConvergesToTheOptimumInClosedForm) {
  constexpr int kN = 4;
  constexpr int kSteps = 60;
  constexpr double kLr = 0.2;
  for (auto [k, dim] : {std::pair<std::int64_t, std::size_t>{1, 23}, {2, 23}, {3, 23}, {4, 23}, {4, 2}}) {
    const PsRun run = run_quadratic(kN, ps_options("sync", k, kLr), dim, 0.5f, steps_of(kSteps), no_sleep);
    for (std::size_t i = 0; i < dim; ++i) {
      const double cbar = mean_centre(kN, i);
      const double expect = cbar + std::pow(1 - kLr, kSteps) * (0.5 - cbar);
      ASSERT_NEAR(run.finals[0][i], expect, 1e-5 * (1 + std::abs(expect))) << "K=" << k << " i=" << i;
      ASSERT_NEAR(run.finals[0][i], cbar, 2e-5 * (1 + std::abs(cbar))) << "K=" << k << " i=" << i;
    }
    for (int w = 1; w < kN; ++w) EXPECT_EQ(run.finals[static_cast<std::size_t>(w)], run.finals[0]);
    EXPECT_EQ(run.staleness.count, static_cast<std::uint64_t>(k * kN * kSteps));
    EXPECT_EQ(run.staleness.max, 0u);
  }
}

// --- async and ssp ------------------------------------------------------------------------------

// With the workers taking turns (0, 1, ..., n-1, 0, ...; each pushes the gradient of the
// parameters it pulled after its previous push), async is deterministic: a double-precision
// replay of the same order gives the server's parameters, and the version lags are exact - the
// first round reads the initial version, so worker w's first gradient lags w updates; every later
// gradient lags n - 1. Clock lags: worker w reads after its c-th push when the workers after it
// have pushed c - 1, so the lag is 1 (0 for the last worker and for first gradients). ssp with
// s >= 1 never has to hold anyone in this order and gives the same result. The learning rate
// halves every 10 steps: each server must apply the rate its pusher sent for that step.
// Workers taking turns: the servers apply the gradients in a known order, replayed in double
// precision. With lr_semantics per-sample (the default) every gradient is applied with lr / N, with
// per-gradient with lr itself; with lr_staleness inverse, divided by its lag (at least 1).
TEST(Ps, AsyncAndSspInTurnsReplayExactly) {
  constexpr int kN = 4;
  constexpr int kRounds = 30;
  constexpr std::size_t kDim = 9;
  constexpr double kLr = 0.1;
  constexpr float kX0 = 0.5f;
  const std::uint64_t lag_sum = (0 + 1 + 2 + 3) + static_cast<std::uint64_t>((kRounds - 1) * kN * (kN - 1));
  const std::array<std::pair<const char*, const char*>, 4> variants{
      {{"per-sample", "none"}, {"per-gradient", "none"}, {"per-gradient", "inverse"}, {"per-sample", "inverse"}}};
  for (const auto& [semantics, lr_staleness] : variants) {
    const double eta = std::string(semantics) == "per-sample" ? kLr / kN : kLr;
    const bool by_lag = std::string(lr_staleness) == "inverse";
    // The replay: server parameters and every worker's pulled copy, per coordinate.
    std::vector<double> server(kDim, kX0);
    std::vector<std::vector<double>> pulled(kN, std::vector<double>(kDim, kX0));
    for (int t = 0; t < kRounds; ++t)
      for (int w = 0; w < kN; ++w) {
        const int lag = t == 0 ? w : kN - 1;  // as counted above
        const double rate = eta * std::pow(0.5, t / 10) / (by_lag ? std::max(1, lag) : 1);
        for (std::size_t i = 0; i < kDim; ++i) {
          server[i] -= rate * (pulled[static_cast<std::size_t>(w)][i] - centre(w, i));
          pulled[static_cast<std::size_t>(w)][i] = server[i];
        }
      }
    for (const char* mode : {"async", "ssp"}) {
      for (std::int64_t k : {1, 2}) {
        WorkerOptions options = ps_options(mode, k, kLr, 1, semantics, lr_staleness);
        options.schedule = {.name = "step", .step_size = 10, .gamma = 0.5};
        const PsRun run = run_quadratic(kN, options, kDim, kX0, steps_of(kRounds), no_sleep, /*turns=*/true);
        for (int w = 0; w < kN; ++w)
          for (std::size_t i = 0; i < kDim; ++i)
            ASSERT_NEAR(run.finals[static_cast<std::size_t>(w)][i], server[i], 1e-5 * (1 + std::abs(server[i])))
                << semantics << " " << lr_staleness << " " << mode << " K=" << k << " worker " << w << " i=" << i;
        EXPECT_EQ(run.staleness.count, static_cast<std::uint64_t>(k * kN * kRounds)) << mode << " K=" << k;
        EXPECT_EQ(run.staleness.sum, static_cast<double>(k * lag_sum)) << mode << " K=" << k;
        EXPECT_EQ(run.staleness.max, static_cast<std::uint64_t>(kN - 1)) << mode << " K=" << k;
        EXPECT_EQ(run.max_clock_lag, 1) << mode << " K=" << k;
      }
    }
  }
}

// Workers running freely between barriers every 10 steps (ssp: with a straggler) on the quadratic, SGD with rate eta.
// Per coordinate, with e = x - cbar and delta_w = c_w - cbar (sum_w delta_w = 0), the t-th update applied by a server
// (gradient of worker w_t, read t - r(t) <= L updates earlier) is
//   e_{t+1} = (1 - eta) e_t + eta delta_{w_t} + eta (e_t - e_{r(t)}),
// so after U updates
//   |e_U| <= (1 - eta)^U |e_0|                                   (contraction)
//          + eta max_t |S_t|,  S_t = sum_{u <= t} delta_{w_u}     (summation by parts; S_{U-1} = 0
//                                                                  since every worker's U / N
//                                                                  gradients were all applied)
//          + eta L (M + D)                                       (delay: |e_t - e_{r(t)}| <= eta L (M + D))
// where D = max_w |delta_w|, M = max(|e_0|, D (1 + eta L) / (1 - eta L)) bounds every |e_t|, and
// |S_t| = |sum_w (n_w(t) - mid) delta_w| <= (B / 2) sum_w |delta_w| when the workers' applied
// counts n_w stay within B of each other. B is measured: the gap between the workers' completed
// steps (each worker checks it after each step), + 1 for the push in flight, + 1 for the race of
// reading the counters one by one. L is the largest version lag the servers recorded.
TEST(Ps, AsyncAndSspConvergeToTheOptimum) {
  constexpr int kN = 4;
  constexpr std::size_t kDim = 40;
  constexpr int kSteps = 300;
  constexpr double kEta = 0.01;
  constexpr float kX0 = 0.5f;
  for (const char* mode : {"async", "ssp"}) {
    const bool ssp = std::string(mode) == "ssp";
    for (std::int64_t k : {1, 2}) {
      // Paced every 10 steps: between two barriers each worker pushes at most 10 gradients, so a
      // lag is at most 2 (N - 1) x 10 updates and eta L <= 0.6 whatever the load (free-running,
      // a descheduled worker was seen to lag 300 updates on a loaded 2-core machine).
      const PsRun run = run_quadratic(
          kN, ps_options(mode, k, kEta, 2), kDim, kX0, steps_of(kSteps),
          [ssp](int w, int) { return ssp && w == kN - 1 ? 2e-4 : 0.0; },
          /*turns=*/false, /*pace=*/10);
      ASSERT_EQ(run.staleness.count, static_cast<std::uint64_t>(k * kN * kSteps));
      const double l = static_cast<double>(run.staleness.max);
      ASSERT_LT(kEta * l, 1.0) << "lags too large for the bound";
      const double b = run.spread + 2;
      const double u = kN * kSteps;
      for (std::size_t i = 0; i < kDim; ++i) {
        const double cbar = mean_centre(kN, i);
        double d = 0, sum_abs = 0;
        for (int w = 0; w < kN; ++w) {
          d = std::max(d, std::abs(centre(w, i) - cbar));
          sum_abs += std::abs(centre(w, i) - cbar);
        }
        const double e0 = std::abs(kX0 - cbar);
        const double m = std::max(e0, d * (1 + kEta * l) / (1 - kEta * l));
        const double tol =
            std::pow(1 - kEta, u) * e0 + kEta * (b / 2) * sum_abs + kEta * l * (m + d) + 1e-4;  // + float rounding
        EXPECT_LE(std::abs(run.finals[0][i] - cbar), tol)
            << mode << " K=" << k << " i=" << i << " B=" << b << " L=" << l;
      }
      for (int w = 1; w < kN; ++w) EXPECT_EQ(run.finals[static_cast<std::size_t>(w)], run.finals[0]);
    }
  }
}

// ssp with s = 2: worker 3 waits at a gate (a message from an activity of its own) before its
// first push, so the smallest push count stays 0. Another worker's push number c (0-based) is
// acknowledged only once every worker pushed at least c + 1 - s, i.e. for c + 1 <= s: it makes
// pushes 0..s and waits in push s. Each other worker therefore pushes exactly s + 1 gradients
// while worker 3 is held (entering a step = pushing: nothing waits before the push).
TEST(Ps, SspHoldsEveryWorkerToSPlusOnePushesWhileOneIsHeld) {
  constexpr int kN = 4;
  constexpr int kHeld = kN - 1;
  constexpr std::int64_t kS = 2;
  constexpr int kSteps = 8;
  std::array<std::atomic<int>, kN> entered{};
  std::array<int, kN> reached{}, later{};
  for (std::int64_t k : {1, 2}) {
    for (auto& e : entered) e = 0;
    runtime::threads::World world({.size = kN, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      const int r = ctx.rank();
      std::vector<float> x(10, 0.5f), g(10);
      Worker worker(ctx, ps_options("ssp", k, 0.1, kS), {.params = x, .grads = g});
      if (r == kHeld) {
        const runtime::Tag gate = runtime::make_tag(runtime::TagKind::user, 2, 0);
        std::int64_t open = 1;
        core::Work controller = ctx.spawn("gate", [&] {
          auto all_reached = [&] {
            for (int w = 0; w < kHeld; ++w)
              if (entered[static_cast<std::size_t>(w)].load() < kS + 1) return false;
            return true;
          };
          const double deadline = ctx.now() + 20;  // bounded poll
          while (!all_reached() && ctx.now() < deadline) ctx.sleep(1e-3);
          for (int w = 0; w < kHeld; ++w) reached[static_cast<std::size_t>(w)] = entered[static_cast<std::size_t>(w)];
          ctx.sleep(0.05);  // nobody may get further while the gate is closed
          for (int w = 0; w < kHeld; ++w) later[static_cast<std::size_t>(w)] = entered[static_cast<std::size_t>(w)];
          ctx.send(kHeld, gate, core::ConstView(std::span<const std::int64_t>(&open, 1))).wait();
        });
        std::int64_t got = 0;
        ctx.recv(kHeld, gate, core::MutableView(std::span<std::int64_t>(&got, 1))).wait();
        controller.wait();
      }
      for (int t = 0; t < kSteps; ++t) {
        entered[static_cast<std::size_t>(r)].fetch_add(1);
        testing::gradient(r, x, g);
        worker.step();
      }
      worker.finish();
      EXPECT_LE(ps_of(worker).max_clock_lag(), kS);
    });
    for (int w = 0; w < kHeld; ++w) {
      EXPECT_EQ(reached[static_cast<std::size_t>(w)], kS + 1) << "worker " << w << " K=" << k;
      EXPECT_EQ(later[static_cast<std::size_t>(w)], kS + 1) << "worker " << w << " K=" << k;
    }
    for (int w = 0; w < kN; ++w) EXPECT_EQ(entered[static_cast<std::size_t>(w)].load(), kSteps);
  }
}

// ssp with s = 1, random (seeded) per-step sleeps and different step counts: the clock lag of
// every applied gradient stays <= s; workers that finish early hold nobody (a finished worker
// counts as infinitely far ahead; otherwise the others would wait for ever). Every gradient is
// applied once per shard.
TEST(Ps, SspClockLagNeverExceedsTheBoundUnderRandomDelays) {
  constexpr int kN = 4;
  constexpr std::int64_t kS = 1;
  for (std::int64_t k : {1, 2}) {
    std::vector<std::mt19937> rngs;
    for (int w = 0; w < kN; ++w) rngs.emplace_back(1234 + w);
    const PsRun run = run_quadratic(
        kN, ps_options("ssp", k, 0.05, kS), 16, 0.5f, [](int w) { return 10 + 6 * w; },
        [&rngs](int w, int) {
          std::uniform_real_distribution<double> u(0.0, 1e-3);
          return u(rngs[static_cast<std::size_t>(w)]);
        });
    EXPECT_LE(run.max_clock_lag, kS) << "K=" << k;
    EXPECT_EQ(run.steps, 10 + 16 + 22 + 28);
    EXPECT_EQ(run.staleness.count, static_cast<std::uint64_t>(k * run.steps));
    for (int w = 1; w < kN; ++w) EXPECT_EQ(run.finals[static_cast<std::size_t>(w)], run.finals[0]);
  }
}

// async: every applied gradient is counted once per shard, and the mean version lag is > 0 with
// several workers whatever the timing: every worker's first gradient was computed on version 0,
// and a shard applies them one at a time, so at most one of them has lag 0 and the others lag
// 1, 2, ... or more. Worker 0, which hosts a server, takes no step at all: its server serves
// anyway, and nobody waits for it.
TEST(Ps, AsyncStalenessCountsEveryAppliedGradient) {
  constexpr int kN = 4;
  for (std::int64_t k : {1, 2}) {
    const PsRun run = run_quadratic(
        kN, ps_options("async", k, 0.05), 12, 0.5f, [](int w) { return w == 0 ? 0 : 20 + 5 * w; },
        [](int w, int) { return w == 1 ? 5e-4 : 0.0; });
    EXPECT_EQ(run.steps, 25 + 30 + 35);
    EXPECT_EQ(run.staleness.count, static_cast<std::uint64_t>(k * run.steps));
    EXPECT_GE(run.staleness.sum, static_cast<double>(k * (1 + 2)));
    EXPECT_GT(run.staleness.mean(), 0.0);
    EXPECT_GE(run.staleness.max, 2u);
    for (int w = 1; w < kN; ++w) EXPECT_EQ(run.finals[static_cast<std::size_t>(w)], run.finals[0]);
  }
}

// One worker: every mode is plain SGD on its own quadratic, x_t = c + (1 - eta)^t (x_0 - c), with
// version lag 0 for every gradient; snapshot() reads exactly the parameters just pulled.
TEST(Ps, OneWorkerIsPlainSgdInEveryMode) {
  constexpr std::size_t kDim = 11;
  constexpr double kLr = 0.1;
  constexpr int kSteps = 30;
  for (const char* mode : {"sync", "async", "ssp"}) {
    runtime::threads::World world({.size = 1, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      std::vector<float> x(kDim, 0.5f), g(kDim), view(kDim);
      Worker worker(ctx, ps_options(mode, 1, kLr, 0), {.params = x, .grads = g});
      const PsStrategy& ps = ps_of(worker);
      EXPECT_EQ(ps.asynchronous(), std::string(mode) != "sync");
      for (int t = 1; t <= kSteps; ++t) {
        testing::gradient(0, x, g);
        EXPECT_TRUE(worker.step().applied);
        for (std::size_t i = 0; i < kDim; ++i) {
          const double expect = centre(0, i) + std::pow(1 - kLr, t) * (0.5 - centre(0, i));
          ASSERT_NEAR(x[i], expect, 1e-5 * (1 + std::abs(expect))) << mode << " t=" << t << " i=" << i;
        }
        if (ps.asynchronous()) {
          worker.snapshot(view);
          EXPECT_EQ(view, x) << mode;
        }
      }
      worker.finish();
      EXPECT_EQ(ps.staleness().count, static_cast<std::uint64_t>(kSteps));
      EXPECT_EQ(ps.staleness().max, 0u);
      EXPECT_EQ(ps.max_clock_lag(), 0);
      std::vector<float> out(kDim);
      worker.representative(out);
      EXPECT_EQ(out, x);
    });
  }
}

TEST(Ps, BadOptionsNameTheOptionAndTheAllowedValues) {
  runtime::threads::World world({.size = 2, .op_timeout_seconds = 60});
  world.run([](Context& ctx) {
    collective::Communicator comm(ctx);
    using fast::testing::expect_error;
    expect_error<core::InvalidArgument>([&] { make_strategy({.name = "ps", .mode = "bsp"}, comm); },
                                        {"'mode'", "sync, async, ssp", "'bsp'"});
    expect_error<core::InvalidArgument>([&] { make_strategy({.name = "ps", .servers = 0}, comm); },
                                        {"strategy 'ps': option 'servers'", "[1, 65536]", "got 0"});  // declared
    expect_error<core::InvalidArgument>([&] { make_strategy({.name = "ps", .servers = 3}, comm); },
                                        {"'servers'", "[1, 2]", "got 3"});
    expect_error<core::InvalidArgument>([&] { make_strategy({.name = "ps", .mode = "ssp", .staleness = -1}, comm); },
                                        {"'staleness'", ">= 0", "got -1"});
    // The robust aggregates where the trait robust_aggregate holds: mode sync.
    expect_error<core::InvalidArgument>(
        [&] { make_strategy({.name = "ps", .mode = "ssp", .aggregate = "median"}, comm); },
        {"the robust rules apply to allreduce and ps with mode = sync",
         "strategy 'ps' with mode = ssp takes aggregate = mean"});
    expect_error<core::InvalidArgument>([&] { make_strategy({.name = "ps", .lr_semantics = "per-step"}, comm); },
                                        {"'lr_semantics'", "per-sample, per-gradient", "'per-step'"});
    // A strategy used without the Worker (no attach()) says so.
    auto ps = make_strategy({.name = "ps"}, comm);
    std::vector<float> x(3), g(3);
    auto opt = optim::make_optimizer({}, 3);
    EXPECT_THROW(ps->step({.state = {x, g}, .optimizer = *opt, .lr = 0.1, .step = 0}), core::InvalidUsage);
  });
}

// sync, three workers, gradients (w + 1) everywhere except worker 2's first, which holds a NaN:
// round 0 averages only workers 0 and 1 (x = 1 - 0.5 * 1.5 = 0.25) and every worker, the skipping
// one included, receives it; round 1 averages all three (x = 0.25 - 0.5 * 2 = -0.75). A round of
// non-finite gradients only leaves the shard as it is.
TEST(Ps, SyncAveragesOnlyTheFiniteGradientsOfARound) {
  for (std::int64_t k : {1, 2}) {
    runtime::threads::World world({.size = 3, .op_timeout_seconds = 60});
    world.run([k](Context& ctx) {
      const int r = ctx.rank();
      std::vector<float> x(5, 1.0f), g(5, static_cast<float>(r + 1));
      Worker worker(ctx, ps_options("sync", k, 0.5), {.params = x, .grads = g});
      if (r == 2) g[3] = std::nanf("");
      EXPECT_EQ(worker.step().applied, r != 2);
      for (float v : x) EXPECT_EQ(v, 0.25f);
      std::fill(g.begin(), g.end(), static_cast<float>(r + 1));
      EXPECT_TRUE(worker.step().applied);
      for (float v : x) EXPECT_EQ(v, -0.75f);
      std::fill(g.begin(), g.end(), INFINITY);
      EXPECT_FALSE(worker.step().applied);
      for (float v : x) EXPECT_EQ(v, -0.75f);
      worker.finish();
      EXPECT_EQ(worker.skipped_steps(), r == 2 ? 2 : 1);
      for (float v : x) EXPECT_EQ(v, -0.75f);
    });
  }
}

// With non_finite = error the worker throws after taking part in the round (it holds the new
// parameters), and nobody else is held up: all go on and finish.
TEST(Ps, NonFiniteGradientWithErrorPolicyThrowsAfterTheRound) {
  for (const char* mode : {"sync", "async", "ssp"}) {
    runtime::threads::World world({.size = 3, .op_timeout_seconds = 60});
    world.run([mode](Context& ctx) {
      const int r = ctx.rank();
      std::vector<float> x(4, 1.0f), g(4, 1.0f);
      WorkerOptions options = ps_options(mode, 1, 0.5, 0);
      options.strategy.non_finite = NonFinitePolicy::error;
      Worker worker(ctx, options, {.params = x, .grads = g});
      if (r == 1) {
        g[0] = std::nanf("");
        fast::testing::expect_error<core::InvalidArgument>([&] { worker.step(); }, {"step 1 ", "worker 1"});
      } else {
        EXPECT_TRUE(worker.step().applied);
      }
      std::fill(g.begin(), g.end(), 1.0f);
      worker.step();
      worker.finish();
      // sync: round 0 averages the two finite gradients, round 1 all three: 1 - 0.5 - 0.5.
      // async / ssp: 5 gradients of 1 applied (worker 1's NaN not): 1 - 5 * 0.5.
      const float expect = std::string(mode) == "sync" ? 0.0f : -1.5f;
      for (float v : x) EXPECT_EQ(v, expect) << mode;
      if (r == 0) {
        EXPECT_EQ(worker.strategy().staleness().count, 5u) << mode;
      }
    });
  }
}

// A Worker destroyed without finish() (an error unwinds the training loop) stops its server
// activity and window service on the way out: the world ends instead of waiting for them.
TEST(Ps, DestroyedWithoutFinishStopsTheServer) {
  for (const char* mode : {"sync", "async", "ssp"}) {
    runtime::threads::World world({.size = 3, .op_timeout_seconds = 60});
    world.run([mode](Context& ctx) {
      std::vector<float> x(6, 1.0f), g(6, 1.0f);
      {
        Worker worker(ctx, ps_options(mode, 3, 0.5), {.params = x, .grads = g});
        worker.step();
        worker.communicator().barrier();  // nobody sends to a server after it stopped
      }
      for (float v : x) EXPECT_NE(v, 1.0f) << mode;
    });
  }
}

}  // namespace
}  // namespace fast::strategy
