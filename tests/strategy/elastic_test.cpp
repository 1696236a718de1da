// Elastic synchronous training (Worker::regroup_survivors, collective::agree_on_survivors) under
// the sim runtime, whose hosts fail at known instants: the survivors of a lost worker agree on a
// new group, take one state and go on; on the quadratic problem (quadratic.hpp) averaged SGD
// follows x_t = cbar_G + (1 - lr)^t (x_0 - cbar_G) for the mean centre cbar_G of the group G that
// takes the steps, so the expected model is the closed form with the old group up to the step at
// which the survivors regrouped and the new group after it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "common/error_message.hpp"
#include "common/star_cluster.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/sim/world.hpp"
#include "fast/strategy/worker.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using testing::centre;

constexpr std::size_t kDim = 33;
constexpr int kSteps = 12;
constexpr double kLr = 0.1;
constexpr double kStepSeconds = 1.0;  // the simulated computation of one gradient

runtime::Cluster star(int hosts) { return fast::testing::star_cluster(hosts); }

double group_centre(const std::vector<int>& group, std::size_t i) {
  double c = 0;
  for (int w : group) c += centre(w, i) / static_cast<double>(group.size());
  return c;
}

struct Outcome {
  std::vector<std::vector<float>> finals;
  std::vector<Regrouping> regroupings;  // each survivor's last
  std::vector<int> regroup_calls;
  std::vector<bool> lost;
  std::vector<std::vector<double>> lrs;  // each worker's StepReport::lr of every step it completed
};

// 4 workers train kSteps steps of `strategy` (elastic); the cluster's failures decide who is lost.
// tune: changes to the options (ps's mode and servers, the optimizer).
// on_regroup: called on each survivor after each regrouping, with its Worker.
Outcome run(const runtime::Cluster& cluster, const std::string& strategy, ElasticLr elastic_lr = ElasticLr::keep,
            const std::function<void(WorkerOptions&)>& tune = {},
            const std::function<void(Worker&, int)>& on_regroup = {}) {
  constexpr int kWorkers = 4;
  Outcome out{.finals = std::vector<std::vector<float>>(kWorkers),
              .regroupings = std::vector<Regrouping>(kWorkers),
              .regroup_calls = std::vector<int>(kWorkers, 0),
              .lost = std::vector<bool>(kWorkers, false),
              .lrs = std::vector<std::vector<double>>(kWorkers)};
  runtime::sim::World world({.size = kWorkers, .cluster = cluster, .tolerate_lost = true});
  world.run([&](runtime::Context& ctx) {
    const auto r = static_cast<std::size_t>(ctx.rank());
    std::vector<float> x(kDim, 0.5f), g(kDim);
    WorkerOptions options{.strategy = {.name = strategy, .period = 3},
                          .optimizer = {.name = "sgd", .lr = kLr},
                          .communicator = {.elastic = true},
                          .elastic_lr = elastic_lr};
    if (tune) tune(options);
    Worker worker(ctx, options, {.params = x, .grads = g});
    try {
      while (worker.steps() < kSteps) {
        try {
          for (std::size_t i = 0; i < kDim; ++i) g[i] = x[i] - static_cast<float>(centre(ctx.rank(), i));
          ctx.compute(kStepSeconds * 1e9);
          out.lrs[r].push_back(worker.step().lr);
        } catch (const core::PeerLost&) {
          if (!ctx.alive(ctx.rank())) throw;
          out.regroupings[r] = worker.regroup_survivors();
          ++out.regroup_calls[r];
          if (on_regroup) on_regroup(worker, ctx.rank());
        }
      }
      worker.finish();
    } catch (const core::PeerLost&) {
      out.lost[r] = true;
      throw;
    }
    out.finals[r] = x;
  });
  return out;
}

// The closed form: `before` steps with group `a` at rate kLr, the rest with group `b` at `lr_after`.
double expected(std::size_t i, int before, const std::vector<int>& a, const std::vector<int>& b,
                double lr_after = kLr) {
  const double ca = group_centre(a, i), cb = group_centre(b, i);
  const double x = ca + std::pow(1 - kLr, before) * (0.5 - ca);
  return cb + std::pow(1 - lr_after, kSteps - before) * (x - cb);
}

void expect_survivors(const Outcome& o, const std::vector<int>& survivors, int before, double lr_after = kLr) {
  const std::vector<int> all{0, 1, 2, 3};
  for (int w : survivors) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_FALSE(o.lost[r]) << "worker " << w;
    EXPECT_EQ(o.regroupings[r].members, survivors) << "worker " << w;
    EXPECT_EQ(o.regroupings[r].steps, before) << "worker " << w;
    EXPECT_EQ(o.finals[r], o.finals[static_cast<std::size_t>(survivors.front())]) << "worker " << w << " differs";
  }
  const std::vector<float>& x = o.finals[static_cast<std::size_t>(survivors.front())];
  ASSERT_EQ(x.size(), kDim);
  for (std::size_t i = 0; i < kDim; ++i) {
    const double e = expected(i, before, all, survivors, lr_after);
    ASSERT_NEAR(x[i], e, 1e-5 * (1 + std::abs(e))) << "i=" << i;
  }
}

TEST(ElasticTraining, SurvivorsOfALostWorkerFollowTheClosedFormOfTheirGroup) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 2, .off = 5.5});  // during the 6th step's computation
  const Outcome o = run(cluster, "allreduce");
  EXPECT_TRUE(o.lost[2]);
  expect_survivors(o, {0, 1, 3}, 5);
  for (int w : {0, 1, 3}) {
    EXPECT_EQ(o.regroup_calls[static_cast<std::size_t>(w)], 1);
    EXPECT_EQ(o.regroupings[static_cast<std::size_t>(w)].lost, std::vector<int>{2});
  }
}

// With a codec (fp16, error feedback) the survivors average among themselves too: the closed form
// of their group up to fp16's rounding, one model on every survivor. Every survivor forgets its
// residuals at the regrouping (its saved state holds none then), the source's included: they may
// hold part of the step that failed.
TEST(ElasticTraining, WithACodecTheSurvivorsAverageAmongThemselvesAndForgetTheirResiduals) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 2, .off = 5.5});
  const std::string residual = "allreduce.codec.feedback.residual.";
  std::vector<int> keys_after(4, -1);
  const Outcome o = run(
      cluster, "allreduce", ElasticLr::keep, [](WorkerOptions& w) { w.strategy.compress = "fp16"; },
      [&](Worker& worker, int rank) {
        int keys = 0;
        for (const auto& [name, values] : worker.save().doubles) keys += name.rfind(residual, 0) == 0 ? 1 : 0;
        keys_after[static_cast<std::size_t>(rank)] = keys;
      });
  EXPECT_TRUE(o.lost[2]);
  const std::vector<int> all{0, 1, 2, 3}, survivors{0, 1, 3};
  for (int w : survivors) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_EQ(o.regroupings[r].members, survivors) << "worker " << w;
    EXPECT_EQ(o.regroupings[r].steps, 5) << "worker " << w;
    EXPECT_EQ(o.finals[r], o.finals[0]) << "worker " << w;
    // Every worker had a residual before the regrouping (from its first step on).
    EXPECT_EQ(keys_after[r], 0) << "worker " << w;
  }
  for (std::size_t i = 0; i < kDim; ++i) {
    const double e = expected(i, 5, all, survivors);
    ASSERT_NEAR(o.finals[0][i], e, 2e-3 * (1 + std::abs(e))) << "i=" << i;
  }
}

// With dgc (the local view, FAST's default): at density 1 (topk:ratio=1) and without momentum DGC is
// plain SGD, so the survivors follow the closed form of their group. With momentum (and
// dampening) every survivor starts its velocity afresh (zero, not started) without a residual, and
// looks at the shared parameters, the source too (its own held part of the failed step). Every
// survivor ends with the shared parameters (equal bits).
TEST(ElasticTraining, WithDgcTheSurvivorsAverageAmongThemselvesAndStartTheirMomentumAfresh) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 2, .off = 5.5});
  const std::vector<int> all{0, 1, 2, 3}, survivors{0, 1, 3};
  const Outcome plain = run(cluster, "allreduce", ElasticLr::keep, [](WorkerOptions& w) {
    w.strategy.compress = "topk:ratio=1";
    w.strategy.dgc = true;
  });
  EXPECT_TRUE(plain.lost[2]);
  for (int w : survivors) EXPECT_EQ(plain.finals[static_cast<std::size_t>(w)], plain.finals[0]) << "worker " << w;
  for (std::size_t i = 0; i < kDim; ++i) {
    const double e = expected(i, 5, all, survivors);
    ASSERT_NEAR(plain.finals[0][i], e, 1e-5 * (1 + std::abs(e))) << "i=" << i;
  }
  struct Seen {
    double velocity_norm = -1;
    std::int64_t started = -1;
    int residual_keys = -1;
    bool looks_at_shared = false;
  };
  std::vector<Seen> seen(4);
  const Outcome momentum = run(
      cluster, "allreduce", ElasticLr::keep,
      [](WorkerOptions& w) {
        w.strategy.compress = "topk:ratio=0.25";
        w.strategy.dgc = true;
        w.optimizer.name = "momentum";
        w.optimizer.dampening = 0.5;
      },
      [&](Worker& worker, int rank) {
        const Checkpoint saved = worker.save();
        Seen& s = seen[static_cast<std::size_t>(rank)];
        s.velocity_norm = 0;
        for (float u : saved.arrays.at("allreduce.dgc.velocity")) s.velocity_norm += std::abs(u);
        s.started = saved.integers.at("allreduce.dgc.started");
        s.residual_keys = 0;
        for (const auto& [name, values] : saved.doubles)
          s.residual_keys += name.rfind("allreduce.codec.feedback.residual.", 0) == 0 ? 1 : 0;
        s.looks_at_shared = saved.arrays.at("params") == saved.arrays.at("allreduce.dgc.shared");
      });
  for (int w : survivors) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_EQ(momentum.regroupings[r].members, survivors) << "worker " << w;
    EXPECT_EQ(seen[r].velocity_norm, 0.0) << "worker " << w;
    EXPECT_EQ(seen[r].started, 0) << "worker " << w;
    EXPECT_EQ(seen[r].residual_keys, 0) << "worker " << w;
    EXPECT_TRUE(seen[r].looks_at_shared) << "worker " << w;
    EXPECT_EQ(momentum.finals[r], momentum.finals[0]) << "worker " << w;
  }
}

// ElasticLr: after worker 2's loss the 3 survivors step at kLr (keep) or kLr * 3 / 4 (linear), and
// follow the closed form with that rate from the agreed step on; every step reports its rate.
TEST(ElasticTraining, TheLearningRateOfTheSurvivorsFollowsElasticLr) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 2, .off = 5.5});
  const double scaled = kLr * 3.0 / 4.0;
  const Outcome keep = run(cluster, "allreduce", ElasticLr::keep);
  const Outcome linear = run(cluster, "allreduce", ElasticLr::linear);
  expect_survivors(keep, {0, 1, 3}, 5, kLr);
  expect_survivors(linear, {0, 1, 3}, 5, scaled);
  for (int w : {0, 1, 3}) {
    const auto r = static_cast<std::size_t>(w);
    ASSERT_EQ(linear.lrs[r].size(), static_cast<std::size_t>(kSteps)) << "worker " << w;
    for (std::size_t step = 0; step < linear.lrs[r].size(); ++step) {
      EXPECT_EQ(keep.lrs[r][step], kLr) << "worker " << w << " step " << step;
      EXPECT_EQ(linear.lrs[r][step], step < 5 ? kLr : scaled) << "worker " << w << " step " << step;
    }
  }
  // The two closed forms are far apart after 7 steps: the test tells the rates apart.
  EXPECT_GT(std::abs(expected(0, 5, {0, 1, 2, 3}, {0, 1, 3}, scaled) - expected(0, 5, {0, 1, 2, 3}, {0, 1, 3})), 1e-3);
}

// Without a loss, linear keeps the rate: the group is the one the run started with.
TEST(ElasticTraining, LinearLrWithoutALossIsTheScheduleRate) {
  const Outcome o = run(star(4), "allreduce", ElasticLr::linear);
  for (int w = 0; w < 4; ++w) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_FALSE(o.lost[r]);
    EXPECT_EQ(o.lrs[r], std::vector<double>(kSteps, kLr)) << "worker " << w;
  }
  for (std::size_t i = 0; i < kDim; ++i) {
    const double e = expected(i, kSteps, {0, 1, 2, 3}, {0, 1, 2, 3});
    ASSERT_NEAR(o.finals[0][i], e, 1e-5 * (1 + std::abs(e))) << "i=" << i;
  }
}

// Worker 2 is lost at 5.5 s, during the 6th step's computation; the survivors find it in that
// step's all-reduce from 6 s on (the watch looks every 20 ms) and regroup until about 6.05 s
// (measured: worker 1, the last to notice, enters the agreement at 6.044 s). Worker 1 is lost too,
// at `second` seconds.
Outcome second_loss_at(double second) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 2, .off = 5.5});
  cluster.failures.push_back({.host = 1, .off = second});
  Outcome o = run(cluster, "allreduce");
  EXPECT_TRUE(o.lost[1]);
  EXPECT_TRUE(o.lost[2]);
  expect_survivors(o, {0, 3}, 5);  // every step of the old group that completed stands
  return o;
}

TEST(ElasticTraining, ALossDuringTheAgreementTakesAnotherRound) {
  const Outcome o = second_loss_at(6.03);  // worker 1 has not sent its proposal yet
  for (int w : {0, 3}) {
    const Regrouping& g = o.regroupings[static_cast<std::size_t>(w)];
    EXPECT_EQ(o.regroup_calls[static_cast<std::size_t>(w)], 1);
    EXPECT_EQ(g.agreements, 1);
    EXPECT_EQ(g.rounds, 2u);  // the first round failed on worker 1's loss
    EXPECT_EQ(g.lost, (std::vector<int>{1, 2}));
  }
}

TEST(ElasticTraining, ALossDuringTheStateTransferAgreesAgain) {
  const Outcome o = second_loss_at(6.045);  // agreed with worker 1; the state is on its way
  for (int w : {0, 3}) {
    const Regrouping& g = o.regroupings[static_cast<std::size_t>(w)];
    EXPECT_EQ(o.regroup_calls[static_cast<std::size_t>(w)], 1);
    EXPECT_EQ(g.agreements, 2);
    EXPECT_EQ(g.lost, (std::vector<int>{1, 2}));
  }
}

TEST(ElasticTraining, ALossAfterTheRegroupingIsASecondRegrouping) {
  const Outcome o = second_loss_at(6.055);  // every survivor has regrouped: the next step finds it
  for (int w : {0, 3}) {
    const Regrouping& g = o.regroupings[static_cast<std::size_t>(w)];
    EXPECT_EQ(o.regroup_calls[static_cast<std::size_t>(w)], 2);
    EXPECT_EQ(g.members, (std::vector<int>{0, 3}));
    EXPECT_EQ(g.lost, std::vector<int>{1});
  }
}

TEST(ElasticTraining, LocalSgdSurvivorsEndWithOneModel) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 1, .off = 4.5});  // between two averagings (period 3)
  const Outcome o = run(cluster, "local-sgd");
  EXPECT_TRUE(o.lost[1]);
  for (int w : {0, 2, 3}) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_EQ(o.regroupings[r].members, (std::vector<int>{0, 2, 3}));
    // Step 5 (computed 4-5 s) is local and completes; step 6 averages (6 % 3 == 0) with the lost
    // worker and fails after its local update, which is undone: the survivors go on from 5 steps.
    EXPECT_EQ(o.regroupings[r].steps, 5);
    EXPECT_EQ(o.finals[r], o.finals[0]) << "worker " << w;  // the last step (12) averages
  }
}

// local-sgd with a codec (fp16): the survivors of a loss forget their residuals, and all end with
// one model (the last step averages). The first step averages the initial replicas among the
// members: from different ones (x0_w = 0.5 + w / 8) every replica starts from their mean.
TEST(ElasticTraining, LocalSgdWithACodecAveragesTheInitialReplicasInItsFirstStep) {
  std::vector<int> residual_keys(4, -1);
  std::vector<std::vector<float>> after_first(4);
  const auto with_codec = [&](WorkerOptions& w) { w.strategy.compress = "fp16"; };
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 1, .off = 4.5});
  const Outcome o = run(cluster, "local-sgd", ElasticLr::keep, with_codec, [&](Worker& worker, int rank) {
    int keys = 0;
    for (const auto& [name, values] : worker.save().doubles)
      keys += name.rfind("local_sgd.codec.feedback.residual.", 0) == 0;
    residual_keys[static_cast<std::size_t>(rank)] = keys;
  });
  EXPECT_TRUE(o.lost[1]);
  for (int w : {0, 2, 3}) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_EQ(o.regroupings[r].members, (std::vector<int>{0, 2, 3}));
    // Step 2 averaged through the codec, so every worker had a residual before the regrouping.
    EXPECT_EQ(residual_keys[r], 0) << "worker " << w;
    EXPECT_EQ(o.finals[r], o.finals[0]) << "worker " << w;
  }
  // The first step alone, from different initial replicas, with a zero gradient: the parameters
  // become the mean of the four initial replicas (fp16 holds 0.5 + w / 8 and their mean exactly).
  runtime::sim::World world({.size = 4, .cluster = star(4)});
  world.run([&](runtime::Context& ctx) {
    const auto r = static_cast<std::size_t>(ctx.rank());
    std::vector<float> x(kDim, 0.5f + static_cast<float>(ctx.rank()) / 8.0f), g(kDim, 0.0f);
    WorkerOptions options{.strategy = {.name = "local-sgd", .period = 3},
                          .optimizer = {.name = "sgd", .lr = kLr},
                          .communicator = {.elastic = true}};
    with_codec(options);
    Worker worker(ctx, options, {.params = x, .grads = g});
    EXPECT_EQ(x, std::vector<float>(kDim, 0.5f + static_cast<float>(ctx.rank()) / 8.0f)) << "before the first step";
    worker.step();
    after_first[r] = x;
    worker.finish();
  });
  for (const std::vector<float>& x : after_first) EXPECT_EQ(x, std::vector<float>(kDim, 0.6875f));
}

// local-sgd with a codec and warm-up on every step (gradient averaging through fp16, as allreduce),
// from different initial replicas x0_w = 0.5 + w / 8: host 1 fails in step 0 after its average of
// the initial replicas, during its warm-up all-reduce. The simulated instant falls there: 1 s of
// computation; a message between two hosts of the star crosses two 1 ms links (2 ms); the average
// (recursive doubling, 2 rounds) ends at about 1.004 s, the fp16 ring (6 hops) at about 1.016 s.
// Step 0 changed the parameters before that collective, so it is undone; the survivors take worker
// 0's state, its own initial replica 0.5, average it among themselves again, and follow the closed
// form of their group from 0.5 for every step (not from the mean of the four, 0.6875, which the
// undone step had set).
TEST(ElasticTraining, LocalSgdWithACodecUndoesAStepZeroThatFailedAfterItsAverage) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 1, .off = 1.010});
  const std::vector<int> all{0, 1, 2, 3}, survivors{0, 2, 3};
  std::vector<std::vector<float>> finals(4);
  std::vector<Regrouping> regroupings(4);
  runtime::sim::World world({.size = 4, .cluster = cluster, .tolerate_lost = true});
  world.run([&](runtime::Context& ctx) {
    const auto r = static_cast<std::size_t>(ctx.rank());
    std::vector<float> x(kDim, 0.5f + static_cast<float>(ctx.rank()) / 8.0f), g(kDim);
    Worker worker(ctx,
                  {.strategy = {.name = "local-sgd", .period = 3, .sync_warmup = kSteps, .compress = "fp16"},
                   .optimizer = {.name = "sgd", .lr = kLr},
                   .communicator = {.elastic = true}},
                  {.params = x, .grads = g});
    while (worker.steps() < kSteps) {
      try {
        for (std::size_t i = 0; i < kDim; ++i) g[i] = x[i] - static_cast<float>(centre(ctx.rank(), i));
        ctx.compute(kStepSeconds * 1e9);
        worker.step();
      } catch (const core::PeerLost&) {
        if (!ctx.alive(ctx.rank())) throw;
        regroupings[r] = worker.regroup_survivors();
      }
    }
    worker.finish();
    finals[r] = x;
  });
  for (int w : survivors) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_EQ(regroupings[r].members, survivors) << "worker " << w;
    EXPECT_EQ(regroupings[r].steps, 0) << "worker " << w;
    EXPECT_EQ(finals[r], finals[0]) << "worker " << w;
  }
  for (std::size_t i = 0; i < kDim; ++i) {
    const double e = expected(i, 0, all, survivors);
    ASSERT_NEAR(finals[0][i], e, 2e-3 * (1 + std::abs(e))) << "i=" << i;
  }
}

// dpsgd builds its ring again on the 3 survivors, where the Metropolis-Hastings weights are 1/3
// each: every step averages exactly, x_i <- m - lr (x_i - c_i) with the same mixed model m (the
// gradient is taken before the mixing), so the difference d = x_i - x_j of two survivors follows
// d <- -lr d + lr (c_i - c_j) from d = 0 at the regrouping (every survivor took one state):
// d_k = lr (c_i - c_j) / (1 + lr) (1 - (-lr)^k) after k steps.
TEST(ElasticTraining, DpsgdSurvivorsGossipOnTheirOwnRing) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 2, .off = 5.5});
  const Outcome o = run(cluster, "dpsgd");
  EXPECT_TRUE(o.lost[2]);
  for (int w : {0, 1, 3}) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_EQ(o.regroupings[r].members, (std::vector<int>{0, 1, 3}));
    // Worker 0's ring neighbours are 1 and 3: its 6th step completes without worker 2, so the
    // survivors go on from worker 0's 6 steps (1 and 3 waited for 2).
    EXPECT_EQ(o.regroupings[r].steps, 6);
    EXPECT_EQ(o.regroupings[r].source, 0);
    ASSERT_EQ(o.finals[r].size(), kDim);
  }
  for (int w : {1, 3})
    for (std::size_t i = 0; i < kDim; ++i) {
      const double want = kLr * (centre(w, i) - centre(0, i)) / (1 + kLr) * (1 - std::pow(-kLr, kSteps - 6));
      ASSERT_NEAR(o.finals[static_cast<std::size_t>(w)][i] - o.finals[0][i], want, 1e-5)
          << "worker " << w << " i=" << i;
    }
}

// ps in mode sync with 2 servers, the server of shard 0 lost: the survivors place the servers on
// workers 1 and 2 from their copy of the servers' state and follow the closed form of averaged SGD
// (a round applies the mean gradient of the group, as allreduce does).
TEST(ElasticTraining, PsSurvivorsPlaceTheLostServersShardAgain) {
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 0, .off = 5.5});
  const Outcome o = run(cluster, "ps", ElasticLr::keep, [](WorkerOptions& w) {
    w.strategy.mode = "sync";
    w.strategy.servers = 2;
  });
  EXPECT_TRUE(o.lost[0]);
  expect_survivors(o, {1, 2, 3}, 5);
}

// The same with momentum and a server on every worker: after worker 1's loss the 3 survivors host
// 3 shards of other lengths, each server starting from the momentum that the replies left on
// every worker. The expected model runs the heavy-ball recurrence of the mean gradient (b <- mu b
// + g, x <- x - lr b) in double, with the old group's centre before the regrouping and the new
// group's after; momentum started afresh at the regrouping would end far from it.
TEST(ElasticTraining, PsServersKeepTheirMomentumAcrossTheRegrouping) {
  constexpr double kMu = 0.9;
  runtime::Cluster cluster = star(4);
  cluster.failures.push_back({.host = 1, .off = 5.5});
  const Outcome o = run(cluster, "ps", ElasticLr::keep, [](WorkerOptions& w) {
    w.strategy.mode = "sync";
    w.strategy.servers = 4;
    w.optimizer.name = "momentum";
    w.optimizer.momentum = kMu;
  });
  EXPECT_TRUE(o.lost[1]);
  const std::vector<int> survivors{0, 2, 3};
  for (int w : survivors) {
    const auto r = static_cast<std::size_t>(w);
    EXPECT_EQ(o.regroupings[r].members, survivors) << "worker " << w;
    EXPECT_EQ(o.regroupings[r].steps, 5) << "worker " << w;
    EXPECT_EQ(o.finals[r], o.finals[0]) << "worker " << w << " differs";
  }
  ASSERT_EQ(o.finals[0].size(), kDim);
  double fresh_gap = 0;
  for (std::size_t i = 0; i < kDim; ++i) {
    const auto heavy_ball = [&](bool restart) {
      double x = 0.5, b = 0;
      for (int t = 0; t < kSteps; ++t) {
        if (t == 5 && restart) b = 0;
        const double c = t < 5 ? group_centre({0, 1, 2, 3}, i) : group_centre(survivors, i);
        b = kMu * b + (x - c);
        x -= kLr * b;
      }
      return x;
    };
    const double e = heavy_ball(false);
    ASSERT_NEAR(o.finals[0][i], e, 1e-5 * (1 + std::abs(e))) << "i=" << i;
    fresh_gap = std::max(fresh_gap, std::abs(heavy_ball(true) - e));
  }
  EXPECT_GT(fresh_gap, 1e-3);  // the test tells a kept momentum from a fresh one
}

// A checkpoint of an elastic ps run holds every worker's copy of the servers' state: 4 workers
// (momentum, 2 servers) that resume from the checkpoint of step 6 end with the bits of the run
// straight through.
TEST(ElasticTraining, APsCheckpointResumesBitForBit) {
  constexpr int kWorkers = 4;
  constexpr int kSaveAt = 6;
  std::vector<Checkpoint> saved(kWorkers);
  // Trains from step `from` (restoring saved[rank] first when from > 0) to kSteps; saves at kSaveAt.
  const auto train = [&](int from) {
    std::vector<std::vector<float>> finals(kWorkers);
    runtime::sim::World world({.size = kWorkers, .cluster = star(kWorkers), .tolerate_lost = true});
    world.run([&](runtime::Context& ctx) {
      const auto r = static_cast<std::size_t>(ctx.rank());
      std::vector<float> x(kDim, 0.5f), g(kDim);
      WorkerOptions options{.strategy = {.name = "ps", .mode = "sync", .servers = 2},
                            .optimizer = {.name = "momentum", .lr = kLr, .momentum = 0.9},
                            .communicator = {.elastic = true}};
      Worker worker(ctx, options, {.params = x, .grads = g});
      if (from > 0) worker.restore(saved[r], "the checkpoint of step 6");
      while (worker.steps() < kSteps) {
        if (worker.steps() == kSaveAt && from == 0) saved[r] = worker.save();
        for (std::size_t i = 0; i < kDim; ++i) g[i] = x[i] - static_cast<float>(centre(ctx.rank(), i));
        ctx.compute(kStepSeconds * 1e9);
        worker.step();
      }
      worker.finish();
      finals[r] = x;
    });
    return finals;
  };
  const std::vector<std::vector<float>> straight = train(0);
  const std::vector<std::vector<float>> resumed = train(kSaveAt);
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(resumed[static_cast<std::size_t>(w)], straight[static_cast<std::size_t>(w)]) << "worker " << w;
    EXPECT_EQ(straight[static_cast<std::size_t>(w)], straight[0]) << "worker " << w;
  }
}

TEST(ElasticTraining, RefusalsNameWhyAndWhatIsSupported) {
  EXPECT_EQ(elastic_refusal({.name = "allreduce"}), "");
  EXPECT_EQ(elastic_refusal({.name = "local-sgd"}), "");
  EXPECT_EQ(elastic_refusal({.name = "allreduce", .compress = "int8"}), "");
  EXPECT_EQ(elastic_refusal({.name = "allreduce", .compress = "topk:ratio=0.1", .dgc = true}), "");
  EXPECT_EQ(elastic_refusal({.name = "local-sgd", .compress = "int8"}), "");
  EXPECT_NE(elastic_refusal({.name = "ps", .mode = "sync", .compress = "topk:ratio=0.1", .dgc = true})
                .find("dgc = true sends through a reply link per worker"),
            std::string::npos);
  EXPECT_NE(elastic_refusal({.name = "allreduce", .aggregate = "median"}).find("aggregate = 'median'"),
            std::string::npos);
  EXPECT_EQ(elastic_refusal({.name = "dpsgd"}), "");
  EXPECT_NE(elastic_refusal({.name = "dpsgd", .compress = "int8"}).find("compress = 'int8'"), std::string::npos);
  EXPECT_EQ(elastic_refusal({.name = "ps", .mode = "sync"}), "");
  EXPECT_NE(elastic_refusal({.name = "ps", .mode = "sync", .compress = "int8"}).find("compress = 'int8'"),
            std::string::npos);
  EXPECT_NE(elastic_refusal({.name = "ps", .mode = "sync", .aggregate = "median"}).find("aggregate = 'median'"),
            std::string::npos);
  EXPECT_NE(elastic_refusal({.name = "ps", .mode = "async"}).find("asynchronous"), std::string::npos);
  EXPECT_NE(elastic_refusal({.name = "adpsgd"}).find("asynchronous"), std::string::npos);
}

// The group sizes an elastic dpsgd run may shrink to that its topology does not fit are named before
// the run: a hypercube fits powers of two only (of 2 to 8 workers: not 3, 5, 6, 7); a ring fits
// every size; strategies without a group check have no sizes to name.
TEST(ElasticTraining, GroupSizesATopologyDoesNotFitAreNamed) {
  const std::string warning = elastic_group_warning({.name = "dpsgd", .topology = "hypercube"}, 2, 8);
  EXPECT_NE(warning.find("cannot go on as a group of 3, 5-7 worker(s) (topology 'hypercube'"), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("or min_workers above 7"), std::string::npos) << warning;
  EXPECT_NE(warning.find("ends the run (exit code 5)"), std::string::npos) << warning;
  EXPECT_EQ(elastic_group_warning({.name = "dpsgd", .topology = "hypercube"}, 4, 4), "");
  EXPECT_EQ(elastic_group_warning({.name = "dpsgd", .topology = "ring"}, 1, 9), "");
  EXPECT_EQ(elastic_group_warning({.name = "allreduce"}, 1, 9), "");
}

TEST(ElasticTraining, RegroupingNeedsAnElasticCommunicator) {
  runtime::sim::World world({.size = 1, .cluster = star(1)});
  world.run([](runtime::Context& ctx) {
    std::vector<float> x(4, 0.0f), g(4, 0.0f);
    Worker worker(ctx, {.optimizer = {.name = "sgd", .lr = 0.1}}, {.params = x, .grads = g});
    EXPECT_THROW(worker.regroup_survivors(), core::InvalidUsage);
    EXPECT_THROW((void)worker.admit(0), core::InvalidUsage);
  });
}

// fault_inject exit-while-admitting is a testing aid of elastic runs: a Worker without an elastic
// Communicator refuses it, naming the spec; with one, under a runtime whose workers share the
// process, it refuses it for that.
TEST(ElasticTraining, ExitWhileAdmittingNeedsAnElasticCommunicator) {
  runtime::sim::World world({.size = 1, .cluster = star(1)});
  world.run([](runtime::Context& ctx) {
    std::vector<float> x(4, 1.0f), g(4, 0.5f);
    const StrategyOptions fault{.name = "allreduce", .fault_inject = "exit-while-admitting@0"};
    fast::testing::expect_error<core::InvalidArgument>(
        [&] { Worker(ctx, {.strategy = fault, .optimizer = {.name = "sgd", .lr = 0.1}}, {.params = x, .grads = g}); },
        {"fault_inject 'exit-while-admitting@0'", "needs an elastic run"});
    const StrategyOptions agreeing{.name = "allreduce", .fault_inject = "exit-while-agreeing@0"};
    fast::testing::expect_error<core::InvalidArgument>(
        [&] {
          Worker(ctx, {.strategy = agreeing, .optimizer = {.name = "sgd", .lr = 0.1}}, {.params = x, .grads = g});
        },
        {"fault_inject 'exit-while-agreeing@0'", "exit-while-agreeing needs an elastic run"});
    const StrategyOptions ending{.name = "allreduce", .fault_inject = "exit-while-ending@0"};
    fast::testing::expect_error<core::InvalidArgument>(
        [&] { Worker(ctx, {.strategy = ending, .optimizer = {.name = "sgd", .lr = 0.1}}, {.params = x, .grads = g}); },
        {"fault_inject 'exit-while-ending@0'", "needs an elastic run", "or an asynchronous strategy"});
    // Past those checks (an asynchronous strategy, an elastic communicator), a kind that kills the
    // process is refused where every worker shares it: under sim here (the zmq runs of
    // elastic_cli_test and elastic_end_test inject them).
    const StrategyOptions gossip{.name = "adpsgd", .fault_inject = "exit-while-ending@0"};
    fast::testing::expect_error<core::InvalidArgument>(
        [&] { Worker(ctx, {.strategy = gossip, .optimizer = {.name = "sgd", .lr = 0.1}}, {.params = x, .grads = g}); },
        {"fault_inject 'exit-while-ending@0': exit-while-ending kills the worker's process, and under runtime 'sim'"});
    fast::testing::expect_error<core::InvalidArgument>(
        [&] {
          Worker(ctx, {.strategy = fault, .optimizer = {.name = "sgd", .lr = 0.1}, .communicator = {.elastic = true}},
                 {.params = x, .grads = g});
        },
        {"exit-while-admitting kills the worker's process"});
  });
}

}  // namespace
}  // namespace fast::strategy
