#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "common/error_message.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/acid.hpp"
#include "fast/strategy/worker.hpp"
#include "fast/topology/builders.hpp"
#include "paced.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using runtime::Context;

const AcidStrategy& acid_of(const Worker& worker) { return dynamic_cast<const AcidStrategy&>(worker.strategy()); }

double consensus_distance(const std::vector<std::vector<float>>& replicas) {
  const std::size_t dim = replicas[0].size();
  double total = 0;
  for (std::size_t i = 0; i < dim; ++i) {
    double mean = 0;
    for (const auto& r : replicas) mean += r[i] / static_cast<double>(replicas.size());
    for (const auto& r : replicas) total += (r[i] - mean) * (r[i] - mean);
  }
  return total;
}

// The mixing ODE dx = eta (x~ - x) dt, dx~ = eta (x - x~) dt integrated independently by RK4 with
// 2000 substeps (error ~ (eta h)^5, far below float precision) must match acid_mix's closed form;
// x - x~ must shrink by exactly exp(-2 eta dt) and x + x~ stay put; two mixings compose.
TEST(Acid, MixingMatchesTheClosedFormOfTheOde) {
  for (double eta : {0.0, 0.3, 1.7}) {
    for (double dt : {0.0, 0.25, 1.0, 3.0}) {
      std::vector<float> x{1.0f, -2.0f, 0.5f, 4.0f}, xt{0.0f, 3.0f, 0.5f, -1.0f};
      const std::vector<float> x0 = x, xt0 = xt;
      acid_mix(x, xt, eta, dt);
      for (std::size_t i = 0; i < x.size(); ++i) {
        double a = x0[i], b = xt0[i];
        const int steps = 2000;
        const double h = dt / steps;
        auto f = [eta](double p, double q) { return eta * (q - p); };  // da/dt = f(a, b), db/dt = f(b, a)
        for (int s = 0; s < steps; ++s) {
          const double ka1 = f(a, b), kb1 = f(b, a);
          const double ka2 = f(a + h / 2 * ka1, b + h / 2 * kb1), kb2 = f(b + h / 2 * kb1, a + h / 2 * ka1);
          const double ka3 = f(a + h / 2 * ka2, b + h / 2 * kb2), kb3 = f(b + h / 2 * kb2, a + h / 2 * ka2);
          const double ka4 = f(a + h * ka3, b + h * kb3), kb4 = f(b + h * kb3, a + h * ka3);
          a += h / 6 * (ka1 + 2 * ka2 + 2 * ka3 + ka4);
          b += h / 6 * (kb1 + 2 * kb2 + 2 * kb3 + kb4);
        }
        EXPECT_NEAR(x[i], a, 1e-6) << "eta=" << eta << " dt=" << dt;
        EXPECT_NEAR(xt[i], b, 1e-6) << "eta=" << eta << " dt=" << dt;
        EXPECT_NEAR(x[i] - xt[i], std::exp(-2 * eta * dt) * (x0[i] - xt0[i]), 1e-6);
        EXPECT_NEAR(x[i] + xt[i], x0[i] + xt0[i], 1e-6);
      }
    }
  }
  // Composition: mixing 0.3 then 0.7 equals mixing 1.0 (the flow of a linear ODE).
  std::vector<float> x{2.0f, -1.0f}, xt{-3.0f, 5.0f}, y = x, yt = xt;
  acid_mix(x, xt, 0.8, 0.3);
  acid_mix(x, xt, 0.8, 0.7);
  acid_mix(y, yt, 0.8, 1.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(x[i], y[i], 1e-6);
    EXPECT_NEAR(xt[i], yt[i], 1e-6);
  }
  std::vector<float> shorter(1);
  fast::testing::expect_error<core::InvalidArgument>([&] { acid_mix(x, shorter, 1.0, 1.0); }, {"acid_mix", "length"});
  fast::testing::expect_error<core::InvalidArgument>([&] { acid_mix(x, xt, -1.0, 1.0); }, {"eta", "-1"});
}

// Closed forms (lambda_ij = comm_rate / 2 (1/d_i + 1/d_j)):
//   ring of n (d = 2): Lambda = (r/2) L_cycle, eigenvalues r (1 - cos(2 pi k / n)), so
//     chi1 = 1 / (r (1 - cos(2 pi / n))); an edge's effective resistance in a cycle of unit
//     conductances is (n-1)/n, here scaled by 2/r, so chi2 = (n - 1) / (r n).
//   complete graph (d = n - 1): Lambda = r/(n-1) (n I - 1 1^T), all positive eigenvalues r n/(n-1),
//     Lambda^+ = (n-1)/(r n) (I - 1 1^T / n), so chi1 = chi2 = (n - 1) / (r n), alpha~ = 1/2.
TEST(Acid, ConstantsMatchClosedFormsOnRingAndCompleteGraphs) {
  for (int n : {3, 4, 8, 16}) {
    for (double r : {1.0, 2.5}) {
      const AcidConstants ring = acid_constants(topology::ring(n), r);
      const double chi1 = 1.0 / (r * (1 - std::cos(2 * std::numbers::pi / n)));
      const double chi2 = (n - 1.0) / (r * n);
      EXPECT_NEAR(ring.chi1, chi1, 1e-9 * chi1) << n;
      EXPECT_NEAR(ring.chi2, chi2, 1e-9 * chi2) << n;
      EXPECT_NEAR(ring.eta, 1 / (2 * std::sqrt(chi1 * chi2)), 1e-9) << n;
      EXPECT_NEAR(ring.alpha_tilde, 0.5 * std::sqrt(chi1 / chi2), 1e-9) << n;
      const AcidConstants full = acid_constants(topology::complete(n), r);
      EXPECT_NEAR(full.chi1, (n - 1.0) / (r * n), 1e-9) << n;
      EXPECT_NEAR(full.chi2, (n - 1.0) / (r * n), 1e-9) << n;
      EXPECT_NEAR(full.alpha_tilde, 0.5, 1e-9) << n;
      EXPECT_NEAR(full.eta, r * n / (2.0 * (n - 1)), 1e-9) << n;
    }
  }
  for (const char* spec : {"torus2d:3x4", "star", "tree", "hypercube"}) {
    const AcidConstants c = acid_constants(topology::make_topology(spec, spec[0] == 'h' ? 8 : 12), 1.0);
    EXPECT_LE(c.chi2, c.chi1 * (1 + 1e-12)) << spec;  // the paper's chi2 <= chi1, so alpha~ >= 1/2
    EXPECT_GE(c.alpha_tilde, 0.5 - 1e-12) << spec;
  }
}

// The clock: per step, Poisson(comm_rate / 2) initiated communications at sorted uniform times in
// (0, 1), with uniformly drawn neighbours; a pure function of (seed, rank, step). Over 20000 steps
// the mean count is within 4 standard deviations (sqrt(mean / 20000)) of comm_rate / 2 and each
// ring neighbour gets half of the events within 4 binomial standard deviations; the seed is fixed,
// so this is deterministic.
TEST(Acid, EventsArePoissonAndDeterminedBySeedAndRank) {
  constexpr int kSteps = 20000;
  constexpr double kRate = 3.0;
  std::vector<std::vector<AcidEvent>> first(4), again(4), other_seed(4);
  for (std::uint64_t seed : {11u, 11u, 12u}) {
    runtime::threads::World world({.size = 4});
    world.run([&](Context& ctx) {
      collective::Communicator comm(ctx);
      const auto strategy = make_strategy({.name = "acid", .seed = seed, .comm_rate = kRate}, comm);
      const auto& acid = dynamic_cast<const AcidStrategy&>(*strategy);
      const int r = ctx.rank();
      std::int64_t count = 0, to_next = 0;
      for (int t = 0; t < kSteps; ++t) {
        const std::vector<AcidEvent> events = acid.events(t);
        count += static_cast<std::int64_t>(events.size());
        for (std::size_t k = 0; k < events.size(); ++k) {
          EXPECT_GT(events[k].time, 0.0);
          EXPECT_LT(events[k].time, 1.0);
          if (k > 0) {
            EXPECT_LE(events[k - 1].time, events[k].time);
          }
          EXPECT_TRUE(events[k].peer == (r + 1) % 4 || events[k].peer == (r + 3) % 4) << events[k].peer;
          to_next += events[k].peer == (r + 1) % 4;
        }
      }
      const double mean = static_cast<double>(count) / kSteps;
      EXPECT_NEAR(mean, kRate / 2, 4 * std::sqrt(kRate / 2 / kSteps)) << "rank " << r;
      EXPECT_NEAR(static_cast<double>(to_next), count / 2.0, 4 * std::sqrt(count / 4.0)) << "rank " << r;
      std::vector<AcidEvent> head;
      for (int t = 0; t < 50; ++t)
        for (const AcidEvent& e : acid.events(t)) head.push_back(e);
      auto& slot = seed == 12u ? other_seed[r] : (first[r].empty() ? first[r] : again[r]);
      slot = head;
    });
  }
  auto same = [](const std::vector<AcidEvent>& a, const std::vector<AcidEvent>& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(),
                      [](const AcidEvent& p, const AcidEvent& q) { return p.time == q.time && p.peer == q.peer; });
  };
  for (int r = 0; r < 4; ++r) {
    EXPECT_FALSE(first[r].empty());
    EXPECT_TRUE(same(first[r], again[r])) << "rank " << r << ": same seed, different events";
    EXPECT_FALSE(same(first[r], other_seed[r])) << "rank " << r << ": the seed is ignored";
    if (r > 0) {
      EXPECT_FALSE(same(first[r], first[0])) << "rank " << r << " draws rank 0's events";
    }
  }
}

// With eta = 0 the momentum is off and x is asynchronous pairwise gossip averaging. The turns are
// serialised (one worker steps while the others wait at a barrier), so every communication sees
// its neighbour's current value (published copy + inbox) and is the exact update
// x_i, x_j <- (x_i + x_j) / 2. An independent simulation applies that update to plain doubles
// following the events each worker reports for its steps; the workers take 6, 5, 4 and 3 steps.
TEST(Acid, WithoutMomentumItIsPairwiseGossipAveraging) {
  constexpr std::size_t kDim = 10;
  const std::vector<int> steps{6, 5, 4, 3};
  const int n = 4;
  const int turns = *std::max_element(steps.begin(), steps.end());
  std::vector<std::vector<float>> end(n);
  std::vector<std::vector<std::vector<AcidEvent>>> events(n);  // [worker][step]
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    const int r = ctx.rank();
    std::vector<float> x(kDim), g(kDim, 0.0f);
    for (std::size_t i = 0; i < kDim; ++i) x[i] = static_cast<float>(testing::centre(r, i));
    Worker worker(ctx,
                  {.strategy = {.name = "acid", .seed = 5, .comm_rate = 2.0, .acid_eta = 0.0},
                   .optimizer = {.name = "sgd", .lr = 0.1}},
                  {.params = x, .grads = g});
    EXPECT_EQ(acid_of(worker).eta(), 0.0);
    for (int t = 0; t < turns; ++t) {
      for (int w = 0; w < n; ++w) {
        if (w == r && t < steps[static_cast<std::size_t>(r)]) {
          events[r].push_back(acid_of(worker).events(t));
          worker.step();
        }
        worker.communicator().barrier();
      }
    }
    worker.finish();
    end[r] = x;
  });
  std::vector<std::vector<double>> y(n, std::vector<double>(kDim));
  for (int w = 0; w < n; ++w)
    for (std::size_t i = 0; i < kDim; ++i) y[w][i] = testing::centre(w, i);
  int communications = 0;
  for (int t = 0; t < turns; ++t)
    for (int w = 0; w < n; ++w) {
      if (t >= steps[static_cast<std::size_t>(w)]) continue;
      for (const AcidEvent& e : events[w][static_cast<std::size_t>(t)]) {
        for (std::size_t i = 0; i < kDim; ++i) y[w][i] = y[e.peer][i] = (y[w][i] + y[e.peer][i]) / 2;
        ++communications;
      }
    }
  EXPECT_GE(communications, 10);  // expected 18 x comm_rate / 2 = 18: the check is not vacuous
  double moved = 0;
  for (int w = 0; w < n; ++w)
    for (std::size_t i = 0; i < kDim; ++i) {
      EXPECT_NEAR(end[w][i], y[w][i], 2e-6) << "worker " << w << " i=" << i;
      moved = std::max(moved, std::abs(y[w][i] - testing::centre(w, i)));
    }
  EXPECT_GT(moved, 0.5);
}

// Zero gradients, free-running workers (no pacing) with different step counts (40, 30, 20, 10):
// whatever the interleaving, communications transfer mass between x and inboxes and the mixing
// between x_i and x~_i, so after finish() (inboxes folded) sum_i (x_i + x~_i) equals its initial
// value 2 sum_i x_i(0), and with eta = 0, sum_i x_i alone does (float rounding only: ~1e-6 here).
// The averaging does happen: the consensus distance of x falls below a quarter of its start
// (about 125 communications expected: 100 steps x comm_rate / 2).
TEST(Acid, ZeroGradientsConserveTheSums) {
  constexpr std::size_t kDim = 24;
  const int n = 4;
  for (double eta : {0.0, -1.0}) {  // -1: the paper's eta from the ring
    std::vector<std::vector<float>> start(n), end(n), end_tilde(n);
    std::vector<std::int64_t> communications(n);
    runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      const int r = ctx.rank();
      std::vector<float> x(kDim), g(kDim, 0.0f);
      for (std::size_t i = 0; i < kDim; ++i) x[i] = static_cast<float>(testing::centre(r, i));
      start[r] = x;
      Worker worker(ctx,
                    {.strategy = {.name = "acid", .seed = 3, .comm_rate = 2.5, .acid_eta = eta},
                     .optimizer = {.name = "momentum", .lr = 0.1}},
                    {.params = x, .grads = g});
      for (int t = 0; t < 10 * (n - r); ++t) worker.step();
      worker.finish();
      end[r] = x;
      const auto xt = acid_of(worker).x_tilde();
      end_tilde[r].assign(xt.begin(), xt.end());
      communications[r] = acid_of(worker).communications();
      if (eta == -1.0) {
        EXPECT_GT(acid_of(worker).eta(), 0.0);
      }
    });
    for (std::size_t i = 0; i < kDim; ++i) {
      double before = 0, after_x = 0, after_both = 0;
      for (int w = 0; w < n; ++w) {
        before += start[w][i];
        after_x += end[w][i];
        after_both += end[w][i] + end_tilde[w][i];
      }
      EXPECT_NEAR(after_both, 2 * before, 1e-4) << "eta=" << eta << " i=" << i;
      if (eta == 0.0) {
        EXPECT_NEAR(after_x, before, 1e-4) << "i=" << i;
      }
    }
    std::int64_t total = 0;
    for (auto c : communications) total += c;
    EXPECT_GT(total, 40) << "eta=" << eta;
    EXPECT_LT(consensus_distance(end), 0.25 * consensus_distance(start)) << "eta=" << eta;
  }
}

// Convergence with a straggler, as Easgd's test: paced rounds (tests/strategy/paced.hpp) in which
// workers 0-2 take 5 steps and worker 3 takes 4, 300 rounds (1500 and 1200 steps), each on a cosine
// schedule from lr 0.1 to 0, on a ring with the paper's eta and alpha~ and comm_rate 1.
// Communications and mixing conserve sum_i (x_i + x~_i) and both variables take the same
// gradient steps, so as the lr vanishes the replicas tend to the step-rate weighted optimum c_s
// (the plain mean of the centres is 0.0526 |c_3 - c_mean| further, 0.14 at most here). The
// residual is an O(lr) bias frozen in at the end of the schedule (the spread of the replicas,
// about lr |c_w - c_s| / (comm_rate x spectral gap), and the order of events within a round);
// measured 0.002-0.006 over 40 runs, pinned to one core or not; tolerance 0.02 (0.025 for each
// replica).
TEST(Acid, ConvergesToTheOptimumOnTheQuadraticWithAStraggler) {
  constexpr std::size_t kDim = 16;
  constexpr double kTolerance = 0.02;
  const testing::Pacing pacing{.steps_per_round = {5, 5, 5, 4}, .rounds = 300};
  const int n = 4;
  std::vector<float> average(kDim);
  std::vector<std::vector<float>> replicas(n);
  runtime::threads::World world({.size = n, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    const int r = ctx.rank();
    std::vector<float> x(kDim, 0.5f), g(kDim);
    Worker worker(ctx,
                  {.strategy = {.name = "acid", .topology = "ring", .seed = 9, .comm_rate = 1.0},
                   .optimizer = {.name = "sgd", .lr = 0.1},
                   .schedule = {.name = "cosine", .total_steps = pacing.total_steps(r)}},
                  {.params = x, .grads = g});
    EXPECT_TRUE(worker.strategy().asynchronous());
    testing::run_paced(worker, pacing, x, g);
    worker.finish();
    std::vector<float> out(kDim);
    worker.representative(out);
    replicas[r] = x;
    if (r == 0) average = out;
  });
  for (std::size_t i = 0; i < kDim; ++i) {
    const double weighted = pacing.weighted_optimum(i);
    EXPECT_NEAR(average[i], weighted, kTolerance) << i;
    for (int w = 0; w < n; ++w)
      EXPECT_NEAR(replicas[w][i], weighted, kTolerance + 0.005) << "worker " << w << " i=" << i;
  }
}

// With a codec a communication applies the fraction gamma (consensus_step) of the paper's update,
// and the constants are the paper's for the rate gamma comm_rate: on a ring of 4 at comm_rate 2,
// alpha~ is the exact-read value and eta is gamma times it (closed forms of the previous test).
// gamma defaults by codec (default_consensus_step); without a codec it is 1 whatever the option.
TEST(Acid, WithACodecACommunicationMovesTheConsensusStep) {
  runtime::threads::World world({.size = 4});
  world.run([](Context& ctx) {
    collective::Communicator comm(ctx);
    const AcidConstants exact = acid_constants(topology::ring(4), 2.0);
    auto made = [&](const std::string& codec, double step) {
      return make_strategy({.name = "acid", .comm_rate = 2.0, .compress = codec, .consensus_step = step}, comm);
    };
    struct Case {
      std::string codec;
      double option;
      double gamma;
    };
    for (const Case& c : {Case{"none", 0.0, 1.0}, Case{"none", 0.3, 1.0}, Case{"fp16", 0.0, 1.0},
                          Case{"int8", 0.0, 0.8}, Case{"sign", 0.0, 0.4}, Case{"randk:ratio=0.25", 0.0, 0.05},
                          Case{"topk:ratio=0.1", 0.0, 0.05}, Case{"randk:ratio=0.25", 0.3, 0.3}}) {
      const auto strategy = made(c.codec, c.option);
      const auto& acid = dynamic_cast<const AcidStrategy&>(*strategy);
      EXPECT_DOUBLE_EQ(acid.consensus_step(), c.gamma) << c.codec << " " << c.option;
      EXPECT_NEAR(acid.alpha_tilde(), exact.alpha_tilde, 1e-12) << c.codec << " " << c.option;
      EXPECT_NEAR(acid.eta(), c.gamma * exact.eta, 1e-12) << c.codec << " " << c.option;
    }
    const auto fixed =
        make_strategy({.name = "acid", .comm_rate = 2.0, .acid_eta = 0.7, .compress = "randk:ratio=0.25"}, comm);
    EXPECT_DOUBLE_EQ(dynamic_cast<const AcidStrategy&>(*fixed).eta(), 0.7);  // an explicit eta is kept
  });
}

TEST(Acid, BadOptionsAreRejected) {
  runtime::threads::World world({.size = 4});
  world.run([](Context& ctx) {
    collective::Communicator comm(ctx);
    for (double rate : {0.0, -1.0, 65.0, std::numeric_limits<double>::quiet_NaN()})
      fast::testing::expect_error<core::InvalidArgument>(
          [&] { make_strategy({.name = "acid", .comm_rate = rate}, comm); }, {"acid", "comm_rate", "(0, 64]", "got"});
    for (double eta : {-0.5, -2.0, std::numeric_limits<double>::infinity()})
      fast::testing::expect_error<core::InvalidArgument>(
          [&] { make_strategy({.name = "acid", .acid_eta = eta}, comm); }, {"acid_eta", ">= 0", "-1", "got"});
    fast::testing::expect_error<core::InvalidArgument>(
        [&] { make_strategy({.name = "acid", .acid_alpha_tilde = -0.25}, comm); }, {"acid_alpha_tilde", "got -0.25"});
    fast::testing::expect_error<core::InvalidArgument>(
        [&] { make_strategy({.name = "acid", .topology = "exponential"}, comm); }, {"acid", "directed"});
    EXPECT_THROW(make_strategy({.name = "acid", .topology = "moebius"}, comm), core::InvalidArgument);
    for (double step : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()})
      fast::testing::expect_error<core::InvalidArgument>(
          [&] { make_strategy({.name = "acid", .compress = "randk:ratio=0.25", .consensus_step = step}, comm); },
          {"acid", "consensus_step", "(0, 1]", "got"});
    EXPECT_NO_THROW(make_strategy({.name = "acid", .comm_rate = 64.0, .acid_eta = 0.0, .acid_alpha_tilde = 0.5}, comm));
  });
}

}  // namespace
}  // namespace fast::strategy
