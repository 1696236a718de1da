// Deep Gradient Compression inside the strategies that send gradients (compress::Dgc through
// allreduce and ps): at density 1 without masking allreduce + dgc is dense momentum SGD; with one
// worker the local view is dense momentum SGD at any density; ps sync + dgc applies the same sparse
// averages as allreduce + dgc; options that cannot apply are refused.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/error_message.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/worker.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using runtime::Context;

constexpr std::size_t kDim = 240;
constexpr int kWorkers = 4;

// Rank 0's parameters after `steps` steps of every worker on the quadratic problem from x = 0,
// under a cosine learning rate over those steps (at the last of 40 steps, a 650th of the base
// rate): DGC must apply each step's rate, whenever the coordinate is sent.
std::vector<float> train(const StrategyOptions& strategy, const optim::OptimizerOptions& optimizer, int steps) {
  std::vector<float> out;
  runtime::threads::World world({.size = kWorkers, .op_timeout_seconds = 60});
  world.run([&](Context& ctx) {
    std::vector<float> x(kDim, 0.0f), g(kDim);
    Worker worker(ctx,
                  {.strategy = strategy, .optimizer = optimizer, .schedule = {.name = "cosine", .total_steps = steps}},
                  {.params = x, .grads = g});
    for (int t = 0; t < steps; ++t) {
      testing::gradient(ctx.rank(), x, g);
      EXPECT_TRUE(worker.step().applied);
    }
    worker.finish();
    if (ctx.rank() == 0) out = x;
  });
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (1 + std::abs(want[i]))) << what << ", element " << i;
}

TEST(DgcStrategy, AllreduceAtDensityOneWithoutMaskingIsDenseMomentum) {
  const optim::OptimizerOptions momentum{.name = "momentum", .lr = 0.05, .momentum = 0.9, .weight_decay = 0.001};
  const std::vector<float> dense = train({.name = "allreduce"}, momentum, 40);
  const std::vector<float> dgc =
      train({.name = "allreduce", .compress = "topk:ratio=1", .dgc = true, .dgc_masking = false}, momentum, 40);
  expect_close(dgc, dense, 1e-5, "allreduce + dgc at density 1");
  double moved = 0;
  for (float v : dense) moved += std::abs(v);
  EXPECT_GT(moved, 10.0);
}

// Both average the workers' sparse messages and apply them at rate 1 (the rate is in them); ps's replies carry the
// whole difference of the shard (keep ratio workers x density), so the replicas agree.
TEST(DgcStrategy, PsSyncAppliesTheSameSparseAveragesAsAllreduce) {
  const optim::OptimizerOptions momentum{.name = "momentum", .lr = 0.05, .momentum = 0.9};
  StrategyOptions options{
      .name = "allreduce", .compress = "topk:ratio=0.05", .dgc = true, .dgc_clip = 5.0, .dgc_warmup_steps = 10};
  const std::vector<float> allreduce = train(options, momentum, 60);
  options.name = "ps";
  options.mode = "sync";
  const std::vector<float> ps = train(options, momentum, 60);
  expect_close(ps, allreduce, 1e-4, "ps sync + dgc against allreduce + dgc");
  // And DGC changed something: without it, plain top-k with error feedback ends elsewhere.
  options.dgc = false;
  const std::vector<float> plain = train(options, momentum, 60);
  double diff = 0;
  for (std::size_t i = 0; i < kDim; ++i) diff += std::abs(plain[i] - ps[i]);
  EXPECT_GT(diff, 1e-2);
}

// The local view with one worker: the residual v holds exactly the updates not sent yet, so the
// view x - v is where dense momentum SGD stands, at any density (without masking, to float
// rounding): every gradient is taken where dense momentum SGD takes it. Without the view the
// gradients are taken at x and the run ends elsewhere. After finish() the parameters are x.
TEST(DgcStrategy, WithOneWorkerTheLocalViewTakesEveryGradientWhereDenseMomentumDoes) {
  const optim::OptimizerOptions momentum{.name = "momentum", .lr = 0.05, .momentum = 0.9};
  const auto run = [&](const StrategyOptions& options, std::vector<float>* before_finish) {
    std::vector<float> after;
    runtime::threads::World world({.size = 1, .op_timeout_seconds = 60});
    world.run([&](Context& ctx) {
      std::vector<float> x(kDim, 0.0f), g(kDim);
      Worker worker(ctx,
                    {.strategy = options, .optimizer = momentum, .schedule = {.name = "cosine", .total_steps = 50}},
                    {.params = x, .grads = g});
      for (int t = 0; t < 50; ++t) {
        testing::gradient(ctx.rank(), x, g);
        EXPECT_TRUE(worker.step().applied);
      }
      if (before_finish) *before_finish = x;
      worker.finish();
      after = x;
    });
    return after;
  };
  std::vector<float> dense, view, plain;
  run({.name = "allreduce"}, &dense);
  const StrategyOptions dgc{.name = "allreduce", .compress = "topk:ratio=0.05", .dgc = true};
  ASSERT_TRUE(dgc.dgc_local_view && !dgc.dgc_masking);  // the defaults
  const std::vector<float> shared = run(dgc, &view);
  expect_close(view, dense, 1e-5, "the local view against dense momentum SGD");
  StrategyOptions at_x = dgc;
  at_x.dgc_local_view = false;
  run(at_x, &plain);
  double off = 0, residual = 0;
  for (std::size_t i = 0; i < kDim; ++i) {
    off += std::abs(plain[i] - dense[i]);
    residual += std::abs(shared[i] - view[i]);
  }
  EXPECT_GT(off, 1e-2) << "without the view the gradients are taken elsewhere";
  EXPECT_GT(residual, 1e-2) << "after finish() the parameters are x, not x - v";
}

TEST(DgcStrategy, RefusesWhatItCannotApplyNamingIt) {
  const auto expect_refused = [](StrategyOptions o, const std::string& needle) {
    o.dgc = true;
    if (o.optimizer.name == "sgd") o.optimizer.name = "momentum";
    try {
      validate_dgc(o);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const core::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_refused({.name = "dpsgd", .compress = "topk:ratio=0.01"}, "strategy 'dpsgd' sends models");
  expect_refused({.name = "allreduce", .compress = "fp16"}, "compress = 'fp16'");
  expect_refused({.name = "ps", .compress = "topk:k=10"}, "compress = 'topk:k=10'");
  StrategyOptions adam{.name = "allreduce", .compress = "topk:ratio=0.01"};
  adam.optimizer.name = "adam";
  expect_refused(adam, "optimizer = 'adam'");
  // The dgc options' ranges are their declarations', checked with every other declared option.
  fast::testing::expect_error<core::InvalidArgument>(
      [] {
        check_strategy_options({.name = "allreduce", .compress = "topk:ratio=0.01", .dgc = true, .dgc_clip = -1}, 4);
      },
      {"strategy 'allreduce': option 'dgc_clip': expected a number >= 0, got -1"});
  fast::testing::expect_error<core::InvalidArgument>(
      [] {
        check_strategy_options({.name = "ps", .compress = "topk:ratio=0.01", .dgc = true, .dgc_warmup_ratio = 1.5}, 4);
      },
      {"strategy 'ps': option 'dgc_warmup_ratio': expected a number in (0, 1], got 1.5"});
  StrategyOptions fine{.name = "ps", .compress = "randk:ratio=0.1", .dgc = true};
  fine.optimizer.name = "nesterov";
  EXPECT_NO_THROW(validate_dgc(fine));
  EXPECT_NO_THROW(validate_dgc({.name = "dpsgd"}));  // without dgc nothing is checked
}

}  // namespace
}  // namespace fast::strategy
