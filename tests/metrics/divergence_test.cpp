#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fast/metrics/divergence.hpp"

namespace fast::metrics {
namespace {

using Kind = DivergenceSign::Kind;
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Divergence, FiniteTrainingLossesAndHealthyEvaluationsAreNotDivergence) {
  DivergenceCheck check(3, 10.0, 10);
  for (int s = 1; s <= 100; ++s) EXPECT_FALSE(check.on_train_loss(s, 2.3 - 0.01 * s).has_value());
  // Above chance while the norm grows a lot: a healthy run.
  EXPECT_FALSE(check.on_evaluation(100, 0.80, 0.5, 35.0).has_value());
  // At chance with the norm near the initial one: a slow run, not a diverged one.
  DivergenceCheck slow(0, 10.0, 10);
  EXPECT_FALSE(slow.on_evaluation(5, 0.10, 2.30, 10.5).has_value());
  EXPECT_FALSE(slow.on_evaluation(10, 0.11, 2.30, 19.9).has_value());  // 1.99x: under the 2x growth
  EXPECT_FALSE(check.diverged());
  EXPECT_FALSE(slow.diverged());
}

TEST(Divergence, ANonFiniteTrainingLossIsLatchedOnceWithItsStep) {
  DivergenceCheck check(2, 10.0, 10);
  const auto sign = check.on_train_loss(37, kNan);
  ASSERT_TRUE(sign.has_value());
  EXPECT_EQ(sign->kind, Kind::train_loss);
  EXPECT_EQ(sign->worker, 2);
  EXPECT_EQ(sign->step, 37);
  EXPECT_EQ(sign->describe(), "worker 2: training loss nan at step 37");
  // Latched: later signs are not reported again, the first one stays.
  EXPECT_FALSE(check.on_train_loss(38, kInf).has_value());
  EXPECT_FALSE(check.on_evaluation(40, 0.1, kNan, 1e9).has_value());
  EXPECT_TRUE(check.diverged());
  EXPECT_EQ(check.sign().step, 37);
  DivergenceCheck inf(0, 1.0, 10);
  ASSERT_TRUE(inf.on_train_loss(1, kInf).has_value());
  EXPECT_EQ(inf.sign().describe(), "worker 0: training loss inf at step 1");
  DivergenceCheck negative_nan(3, 1.0, 10);  // a NaN with its sign bit set, as 0 * -inf gives
  ASSERT_TRUE(negative_nan.on_train_loss(4, -kNan).has_value());
  ASSERT_TRUE(std::signbit(negative_nan.sign().value));
  EXPECT_EQ(negative_nan.sign().describe(), "worker 3: training loss nan at step 4");
}

TEST(Divergence, ANonFiniteEvaluationIsDivergence) {
  DivergenceCheck loss(1, 10.0, 10);
  ASSERT_TRUE(loss.on_evaluation(10, 0.1, kNan, 12.0).has_value());
  EXPECT_EQ(loss.sign().kind, Kind::eval_not_finite);
  EXPECT_EQ(loss.sign().describe(), "worker 1: evaluation at step 10 gave test loss nan");
  DivergenceCheck norm(1, 10.0, 10);
  ASSERT_TRUE(norm.on_evaluation(10, 0.1, 2.3, kInf).has_value());
  EXPECT_EQ(norm.sign().kind, Kind::eval_not_finite);
}

// The run: accuracy 0.10 and norm 354 from an initial norm of about 30.
TEST(Divergence, ChanceAccuracyWithAGrowingNormIsDivergence) {
  DivergenceCheck check(0, 30.0, 10);
  EXPECT_FALSE(check.on_evaluation(100, 0.55, 1.2, 50.0).has_value());  // healthy first evaluation
  const auto sign = check.on_evaluation(200, 0.10, 2.31, 354.0);
  ASSERT_TRUE(sign.has_value());
  EXPECT_EQ(sign->kind, Kind::chance_with_growing_norm);
  EXPECT_EQ(sign->describe(),
            "worker 0: test accuracy 0.1000 (chance) at step 200 while the parameter norm grew to 354");
  // The boundaries: chance is <= 1.5 / classes, growth >= 2x the initial norm AND more than the
  // previous evaluation's norm.
  DivergenceCheck edge(0, 10.0, 4);                                   // chance 0.25, bound 0.375
  EXPECT_FALSE(edge.on_evaluation(1, 0.376, 2.0, 40.0).has_value());  // above the accuracy bound
  EXPECT_FALSE(edge.on_evaluation(2, 0.375, 2.0, 30.0).has_value());  // norm fell since the last one
  EXPECT_TRUE(edge.on_evaluation(3, 0.375, 2.0, 30.5).has_value());   // at the bound, growing, >= 2x
}

TEST(Divergence, BadReferenceValuesAreRefused) {
  EXPECT_THROW(DivergenceCheck(0, 1.0, 1), std::exception);
  EXPECT_THROW(DivergenceCheck(0, kNan, 10), std::exception);
  EXPECT_THROW(DivergenceCheck(0, -1.0, 10), std::exception);
}

}  // namespace
}  // namespace fast::metrics
