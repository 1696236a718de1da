// Robust aggregation (Aggregate) and fault injection (FaultInjection) against closed forms, and
// allreduce with one Byzantine worker on the quadratic.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "common/error_message.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/aggregate.hpp"
#include "fast/strategy/worker.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// 5 workers x 3 coordinates; worker 4 is the outlier.
const std::vector<float> kFive{1,    10,   -1,  //
                               2,    20,   -2,  //
                               3,    30,   -3,  //
                               4,    40,   -4,  //
                               -500, 1e6f, 7};

std::vector<float> apply(const std::string& spec, const std::vector<float>& g, int w, int* chosen = nullptr) {
  std::vector<float> out(g.size() / static_cast<std::size_t>(w));
  const int c = Aggregate::parse(spec, w).apply(g, w, out);
  if (chosen != nullptr) *chosen = c;
  return out;
}

TEST(Aggregate, MeanMedianAndTrimmedMeanPerCoordinate) {
  EXPECT_EQ(apply("mean", kFive, 5), (std::vector<float>{-98, 200020, -0.6f}));
  EXPECT_EQ(apply("median", kFive, 5), (std::vector<float>{2, 30, -2}));  // sorted columns' middle
  // trimmed-mean:1 drops the lowest and highest of each column: {2,3,4}->3, {20,30,40}->30, {-3,-2,-1}->-2.
  EXPECT_EQ(apply("trimmed-mean:1", kFive, 5), (std::vector<float>{2, 30, -2}));
  EXPECT_EQ(apply("trimmed-mean:0", kFive, 5), apply("mean", kFive, 5));
  // Even W: the median is the mean of the two middle values.
  const std::vector<float> four{1, 2, 3, 10};
  EXPECT_EQ(apply("median", four, 4), (std::vector<float>{2.5f}));
  EXPECT_EQ(apply("trimmed-mean:1", four, 4), (std::vector<float>{2.5f}));
}

TEST(Aggregate, NanIsOrderedLastSoTrimmingRemovesIt) {
  const std::vector<float> g{1, 2, 3, kNan, 5};                               // 5 workers, 1 coordinate
  EXPECT_EQ(apply("median", g, 5), (std::vector<float>{3}));                  // 1 2 3 5 NaN
  EXPECT_EQ(apply("trimmed-mean:1", g, 5), (std::vector<float>{10.0f / 3}));  // 2 3 5
}

TEST(Aggregate, KrumChoosesTheGradientClosestToItsNeighbours) {
  // Workers 0-3 near (1, 1), worker 4 far away; F = 1: each is scored on its W - F - 2 = 2 nearest.
  const std::vector<float> g{1.0f, 1.0f, 1.1f, 1.0f, 1.0f, 1.2f, 0.9f, 1.0f, 100, -100};
  int chosen = -1;
  const auto out = apply("krum:1", g, 5, &chosen);
  // Scores (squared distances to the 2 nearest): w0: 0.01 + 0.01 = 0.02; w1: 0.01 + 0.04 = 0.05;
  // w2: 0.04 + 0.05 = 0.09; w3: 0.01 + 0.04 = 0.05 (to w0: 0.01, w1: 0.04); w4: huge. -> w0.
  EXPECT_EQ(chosen, 0);
  EXPECT_EQ(out, (std::vector<float>{1.0f, 1.0f}));
  // A gradient holding a NaN is never chosen.
  const std::vector<float> nan_first{kNan, 1.0f, 1.1f, 1.0f, 1.0f, 1.2f, 0.9f, 1.0f, 1.0f, 1.1f};
  apply("krum:1", nan_first, 5, &chosen);
  EXPECT_NE(chosen, 0);
}

TEST(Aggregate, MultiKrumAveragesTheGradientsWithTheLeastScores) {
  // The gradients of KrumChoosesTheGradientClosestToItsNeighbours: scores w0 0.02, w1 0.05,
  // w2 0.09, w3 0.05, w4 huge.
  const std::vector<float> g{1.0f, 1.0f, 1.1f, 1.0f, 1.0f, 1.2f, 0.9f, 1.0f, 100, -100};
  int chosen = -1;
  // M = 3: w0, then w1 and w3 (tied at 0.05: both, in rank order) -> the mean of rows 0, 1, 3.
  EXPECT_EQ(apply("multi-krum:1:3", g, 5, &chosen), (std::vector<float>{static_cast<float>((1.0 + 1.1f + 0.9f) / 3),
                                                                        static_cast<float>((1.0 + 1.0 + 1.0) / 3)}));
  EXPECT_EQ(chosen, 0);
  // M = 2: the tie at 0.05 goes to the lower rank, w1 -> the mean of rows 0 and 1.
  EXPECT_EQ(apply("multi-krum:1:2", g, 5),
            (std::vector<float>{static_cast<float>((1.0 + 1.1f) / 2), static_cast<float>((1.0 + 1.0) / 2)}));
  // Default M = W - F = 4: every worker but the outlier.
  EXPECT_EQ(apply("multi-krum:1", g, 5), (std::vector<float>{static_cast<float>((1.0 + 1.1f + 1.0 + 0.9f) / 4),
                                                             static_cast<float>((1.0 + 1.0 + 1.2f + 1.0) / 4)}));
  EXPECT_EQ(Aggregate::parse("multi-krum:1", 5).selected(), 4);
  // M = 1 is krum.
  EXPECT_EQ(apply("multi-krum:1:1", g, 5), apply("krum:1", g, 5));
  EXPECT_EQ(krum_selection(std::vector<double>(25, 0.0), 5, 1, 5), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Aggregate, BadSpecsNameTheRuleAndTheBound) {
  using fast::testing::expect_error;
  expect_error<core::InvalidArgument>(
      [] { Aggregate::parse("average", 5); },
      {"aggregate spec 'average': unknown name 'average'", "mean, median, trimmed-mean, krum, multi-krum"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("multi-krum:1:5", 5); },
                                      {"multi-krum's M must be in [1, W - F] = [1, 4], got 5"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("multi-krum:1:0", 5); },
                                      {"M (value 2 of multi-krum:F[:M]) expects an integer in [1, 2147483647], got '0'"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("multi-krum:2", 5); },
                                      {"multi-krum:F needs more than 2F + 2"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("krum:1:2", 5); }, {"F (value 1 of krum:F)", "got '1:2'"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("multi-krum:1:2:3", 7); },
                                      {"multi-krum takes at most 2 values (multi-krum:F[:M]), got '1:2:3'"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("multi-krum:1:x", 5); }, {"'x'"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("krum", 5); }, {"krum needs f (krum:F)"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("krum:2", 5); }, {"more than 2F + 2 workers", "got 5"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("trimmed-mean:2", 4); }, {"more than 2F workers", "got 4"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("trimmed-mean:x", 4); },
                                      {"'trimmed-mean:x'", "F (value 1 of trimmed-mean:F) expects an integer in [0, 2147483647], got 'x'"});
  expect_error<core::InvalidArgument>([] { Aggregate::parse("median:1", 4); }, {"median takes no parameters, got '1'"});
}

TEST(FaultInjection, ScalesZeroesOrPoisonsTheChosenWorkersOnly) {
  const FaultInjection scale = FaultInjection::parse("scale:-100@1,3", 4);
  std::vector<float> g{1, -2};
  scale.apply(0, g);
  EXPECT_EQ(g, (std::vector<float>{1, -2}));
  scale.apply(3, g);
  EXPECT_EQ(g, (std::vector<float>{-100, 200}));
  FaultInjection::parse("zeros@0", 2).apply(0, g);
  EXPECT_EQ(g, (std::vector<float>{0, 0}));
  FaultInjection::parse("nan@0", 2).apply(0, g);
  EXPECT_TRUE(std::isnan(g[0]) && std::isnan(g[1]));
  EXPECT_FALSE(FaultInjection::parse("", 2).active());
  using fast::testing::expect_error;
  expect_error<core::InvalidArgument>([] { FaultInjection::parse("scale:-100@5", 5); }, {"worker 5", "[0, 5)"});
  expect_error<core::InvalidArgument>([] { FaultInjection::parse("nan@1,2,1", 4); },
                                      {"fault_inject 'nan@1,2,1'", "worker 1 is named twice"});
  expect_error<core::InvalidArgument>([] { FaultInjection::parse("flip@1", 5); }, {"unknown kind 'flip'"});
  expect_error<core::InvalidArgument>([] { FaultInjection::parse("scale:inf@1", 5); }, {"finite FACTOR"});
}

// exit-while-admitting changes no gradient; it names the workers Worker::admit kills.
TEST(FaultInjection, ExitWhileAdmittingNamesItsWorkersAndLeavesGradientsAlone) {
  const FaultInjection exits = FaultInjection::parse("exit-while-admitting@0,2", 4);
  EXPECT_TRUE(exits.active());
  EXPECT_TRUE(exits.exits_while_admitting());
  EXPECT_EQ((std::vector<bool>{exits.exits_while_admitting(0), exits.exits_while_admitting(1),
                               exits.exits_while_admitting(2), exits.exits_while_admitting(3)}),
            (std::vector<bool>{true, false, true, false}));
  std::vector<float> g{1, -2};
  exits.apply(0, g);
  EXPECT_EQ(g, (std::vector<float>{1, -2}));
  const FaultInjection scale = FaultInjection::parse("scale:2@0", 1);
  EXPECT_FALSE(scale.exits_while_admitting());
  EXPECT_FALSE(scale.exits_while_admitting(0));
  EXPECT_FALSE(FaultInjection::parse("", 1).exits_while_admitting());
  fast::testing::expect_error<core::InvalidArgument>([] { FaultInjection::parse("exit-while-admitting@4", 4); },
                                                     {"worker 4", "[0, 4)"});
  EXPECT_TRUE(exits.needs_elastic());
  EXPECT_FALSE(exits.exits_while_agreeing(0));
  EXPECT_FALSE(scale.needs_elastic());
}

// exit-while-agreeing: the other kind of an admission, which only an elastic run has.
TEST(FaultInjection, ExitWhileAgreeingNamesItsWorkers) {
  const FaultInjection agrees = FaultInjection::parse("exit-while-agreeing@1", 3);
  EXPECT_TRUE(agrees.exits_while_agreeing());
  EXPECT_TRUE(agrees.needs_elastic());
  EXPECT_EQ(agrees.kind_name(), "exit-while-agreeing");
  EXPECT_EQ((std::vector<bool>{agrees.exits_while_agreeing(0), agrees.exits_while_agreeing(1),
                               agrees.exits_while_agreeing(2)}),
            (std::vector<bool>{false, true, false}));
  EXPECT_FALSE(agrees.exits_while_admitting(1));
  EXPECT_FALSE(agrees.exits_while_checkpointing(1));
}

// exit-while-ending: the end of an elastic run or of an asynchronous one (training/run_end.hpp);
// the Worker and `fast train` check which (elastic_test, hostile_input_test).
TEST(FaultInjection, ExitWhileEndingNamesItsWorkers) {
  const FaultInjection ends = FaultInjection::parse("exit-while-ending@0,2", 3);
  EXPECT_TRUE(ends.exits_while_ending());
  EXPECT_FALSE(ends.needs_elastic());
  EXPECT_EQ(ends.kind_name(), "exit-while-ending");
  EXPECT_EQ((std::vector<bool>{ends.exits_while_ending(0), ends.exits_while_ending(1), ends.exits_while_ending(2)}),
            (std::vector<bool>{true, false, true}));
  EXPECT_FALSE(ends.exits_while_checkpointing(0));
  EXPECT_FALSE(ends.exits_while_admitting(0));
  EXPECT_FALSE(FaultInjection::parse("exit-while-checkpointing@0", 1).exits_while_ending(0));
  EXPECT_TRUE(ends.exits_in_the_end());
  EXPECT_FALSE(ends.exits_after_ending(0));
}

// exit-after-ending: after the end's closing barrier, for the same runs as exit-while-ending.
TEST(FaultInjection, ExitAfterEndingNamesItsWorkersAndKillsTheProcess) {
  const FaultInjection after = FaultInjection::parse("exit-after-ending@1", 3);
  EXPECT_TRUE(after.exits_after_ending());
  EXPECT_TRUE(after.exits_in_the_end());
  EXPECT_TRUE(after.kills_process());
  EXPECT_FALSE(after.exits_while_ending());
  EXPECT_FALSE(after.needs_elastic());
  EXPECT_EQ(after.kind_name(), "exit-after-ending");
  EXPECT_EQ((std::vector<bool>{after.exits_after_ending(0), after.exits_after_ending(1), after.exits_after_ending(2)}),
            (std::vector<bool>{false, true, false}));
  EXPECT_FALSE(after.process_refusal("exit-after-ending@1", "threads", false).empty());
}

// W workers minimise 1/2 ||x - c||^2 with one centre c (testing::centre(0, i)), from x = 0, for
// `steps` SGD steps of rate lr under `strategy` (ps: mode sync) with `rule` and `fault`. Returns
// worker 0's final parameters and its skipped steps.
struct QuadraticRun {
  std::vector<float> x;
  std::int64_t skipped = 0;
};
QuadraticRun run_shared_centre(const char* strategy, const char* rule, const char* fault, int workers, int steps,
                               std::size_t dim, double lr) {
  QuadraticRun run;
  runtime::threads::World world({.size = workers, .op_timeout_seconds = 60});
  world.run([&](runtime::Context& ctx) {
    std::vector<float> x(dim, 0.0f), g(dim);
    Worker worker(ctx,
                  {.strategy = {.name = strategy, .mode = "sync", .aggregate = rule, .fault_inject = fault},
                   .optimizer = {.name = "sgd", .lr = lr}},
                  {.params = x, .grads = g});
    for (int t = 0; t < steps; ++t) {
      for (std::size_t i = 0; i < dim; ++i) g[i] = x[i] - static_cast<float>(testing::centre(0, i));
      worker.step();
    }
    worker.finish();
    if (ctx.rank() == 0) run = {x, worker.skipped_steps()};
  });
  return run;
}

// 5 workers minimise 1/2 ||x - c||^2 with the same centre c; worker 4 sends -100 x its gradient.
// A robust rule sees 4 equal honest gradients and one outlier, so it applies exactly the honest
// gradient: x_t - c = (1 - lr)^t (x_0 - c). The mean applies (4 - 100) / 5 = -19.2 times it:
// x_t - c = (1 + 19.2 lr)^t (x_0 - c), away from the optimum.
// The same under ps --mode sync, whose server applies the rule to each round's gradients.
TEST(Aggregate, AllreduceAndPsSyncWithOneByzantineWorkerFollowTheHonestClosedForm) {
  constexpr int kW = 5, kSteps = 30;
  constexpr std::size_t kDim = 6;
  constexpr double kLr = 0.1;
  for (const char* strategy : {"allreduce", "ps"})
    for (const char* rule : {"median", "trimmed-mean:1", "krum:1", "multi-krum:1", "multi-krum:1:2", "mean"}) {
      const std::vector<float> final_x = run_shared_centre(strategy, rule, "scale:-100@4", kW, kSteps, kDim, kLr).x;
      const bool mean = std::string(rule) == "mean";
      const double factor = std::pow(mean ? 1 + 19.2 * kLr : 1 - kLr, kSteps);
      for (std::size_t i = 0; i < kDim; ++i) {
        const double c = testing::centre(0, i);
        const double expected = c + factor * (0.0 - c);
        EXPECT_NEAR(final_x[i], expected, 1e-4 * (1 + std::abs(expected))) << strategy << " " << rule << " i=" << i;
      }
    }
}

// One worker of 5 sends NaN at every step (non_finite = skip): with the mean every step is skipped,
// counted, and the model stays where it was (finite); the median drops the NaN and follows the
// honest closed form.
TEST(Aggregate, ANanWorkerIsSkippedByTheMeanAndOutvotedByTheMedian) {
  constexpr int kW = 5, kSteps = 10;
  constexpr std::size_t kDim = 4;
  constexpr double kLr = 0.1;
  for (const char* rule : {"mean", "median"}) {
    const QuadraticRun run = run_shared_centre("allreduce", rule, "nan@2", kW, kSteps, kDim, kLr);
    const std::vector<float>& final_x = run.x;
    const std::int64_t skipped = run.skipped;
    const bool mean = std::string(rule) == "mean";
    EXPECT_EQ(skipped, mean ? kSteps : 0) << rule;
    for (std::size_t i = 0; i < kDim; ++i) {
      const double c = testing::centre(0, i);
      const double expected = mean ? 0.0 : c - std::pow(1 - kLr, kSteps) * c;
      EXPECT_NEAR(final_x[i], expected, 1e-5 * (1 + std::abs(expected))) << rule << " i=" << i;
    }
  }
}

}  // namespace
}  // namespace fast::strategy
