#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <thread>
#include <vector>

#include "common/error_message.hpp"
#include "fast/core/error.hpp"
#include "fast/optim/schedule.hpp"

namespace fast::optim {
namespace {

using fast::testing::expect_error;

TEST(LrSchedule, NamesListEverySchedule) {
  EXPECT_EQ(schedule_names(), (std::vector<std::string>{"constant", "step", "cosine"}));
}

TEST(LrSchedule, ConstantIsTheBaseAtEveryStep) {
  const LrSchedule s(0.05, {});
  for (std::int64_t step : {0, 1, 999, 1000000}) EXPECT_EQ(s.lr_at(step), 0.05);
}

TEST(LrSchedule, StepDecaysByGammaAtEachBoundary) {
  const LrSchedule s(1.0, {.name = "step", .step_size = 10, .gamma = 0.5});
  EXPECT_DOUBLE_EQ(s.lr_at(0), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.lr_at(10), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(19), 0.5);
  EXPECT_DOUBLE_EQ(s.lr_at(20), 0.25);
  EXPECT_DOUBLE_EQ(s.lr_at(35), 0.125);
}

TEST(LrSchedule, CosineIsBaseAtZeroMidwayAtHalfAndMinimumAtTheEnd) {
  const double base = 0.1, lo = 0.01;
  const LrSchedule s(base, {.name = "cosine", .total_steps = 100, .min_lr_factor = 0.1});
  EXPECT_DOUBLE_EQ(s.lr_at(0), base);
  EXPECT_DOUBLE_EQ(s.lr_at(50), (base + lo) / 2);
  EXPECT_DOUBLE_EQ(s.lr_at(25), lo + (base - lo) * (1 + std::cos(std::numbers::pi / 4)) / 2);
  EXPECT_DOUBLE_EQ(s.lr_at(100), lo);
  EXPECT_DOUBLE_EQ(s.lr_at(1000), lo);  // stays at the minimum after total_steps
}

TEST(LrSchedule, CosineIsNonIncreasing) {
  const LrSchedule s(1.0, {.name = "cosine", .total_steps = 37});
  for (std::int64_t step = 1; step <= 40; ++step) EXPECT_LE(s.lr_at(step), s.lr_at(step - 1)) << step;
  EXPECT_EQ(s.lr_at(37), 0.0);
}

TEST(LrSchedule, WarmupRampsLinearlyFromBaseOverWarmupToBase) {
  const LrSchedule s(0.4, {.warmup_steps = 4});
  EXPECT_DOUBLE_EQ(s.lr_at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(1), 0.2);
  EXPECT_DOUBLE_EQ(s.lr_at(2), 0.3);
  EXPECT_DOUBLE_EQ(s.lr_at(3), 0.4);
  EXPECT_DOUBLE_EQ(s.lr_at(4), 0.4);
}

TEST(LrSchedule, WarmupMultipliesTheScheduleWithoutShiftingItsClock) {
  const LrSchedule cosine(1.0, {.name = "cosine", .total_steps = 100});
  const LrSchedule warm(1.0, {.name = "cosine", .total_steps = 100, .warmup_steps = 10});
  EXPECT_DOUBLE_EQ(warm.lr_at(0), cosine.lr_at(0) / 10);
  EXPECT_DOUBLE_EQ(warm.lr_at(4), cosine.lr_at(4) * 5 / 10);
  EXPECT_DOUBLE_EQ(warm.lr_at(10), cosine.lr_at(10));
  EXPECT_DOUBLE_EQ(warm.lr_at(100), 0.0);
  const LrSchedule step(1.0, {.name = "step", .step_size = 2, .gamma = 0.5, .warmup_steps = 3});
  EXPECT_DOUBLE_EQ(step.lr_at(2), 0.5 * 3 / 3);
  EXPECT_DOUBLE_EQ(step.lr_at(1), 1.0 * 2 / 3);
}

TEST(LrSchedule, IsSafeToReadFromManyThreads) {
  const LrSchedule s(1.0, {.name = "cosine", .total_steps = 1000, .warmup_steps = 10});
  std::vector<double> expected(1000);
  for (std::int64_t i = 0; i < 1000; ++i) expected[i] = s.lr_at(i);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::int64_t i = 0; i < 1000; ++i) mismatches[t] += s.lr_at(i) != expected[i];
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(LrSchedule, NegativeStepIsRejected) {
  const LrSchedule s(1.0, {});
  expect_error<InvalidArgument>([&] { s.lr_at(-1); }, {"lr_at", "step", "got -1"});
}

TEST(LrSchedule, UnknownNameListsTheAllowedNames) {
  expect_error<InvalidArgument>([] { LrSchedule(1.0, {.name = "linear"}); },
                                {"ScheduleOptions.name", "'linear'", "constant, step, cosine"});
}

TEST(LrSchedule, CosineRequiresTotalSteps) {
  expect_error<InvalidArgument>([] { LrSchedule(1.0, {.name = "cosine"}); },
                                {"ScheduleOptions.total_steps", "required for cosine", "got 0"});
}

TEST(LrSchedule, InvalidOptionsNameTheOptionExpectedAndGot) {
  expect_error<InvalidArgument>([] { LrSchedule(1.0, {.name = "step", .step_size = 0}); },
                                {"ScheduleOptions.step_size", "> 0", "got 0"});
  expect_error<InvalidArgument>([] { LrSchedule(1.0, {.name = "step", .gamma = -0.5}); },
                                {"ScheduleOptions.gamma", "> 0", "got -0.5"});
  expect_error<InvalidArgument>([] { LrSchedule(1.0, {.name = "cosine", .total_steps = 10, .min_lr_factor = 1.5}); },
                                {"ScheduleOptions.min_lr_factor", "[0, 1]", "got 1.5"});
  expect_error<InvalidArgument>([] { LrSchedule(1.0, {.warmup_steps = -3}); },
                                {"ScheduleOptions.warmup_steps", ">= 0", "got -3"});
  expect_error<InvalidArgument>([] { LrSchedule(-0.1, {}); }, {"LrSchedule.base_lr", ">= 0", "got -0.1"});
}

}  // namespace
}  // namespace fast::optim
