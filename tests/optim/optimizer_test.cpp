#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/error_message.hpp"
#include "fast/core/error.hpp"
#include "fast/optim/optimizer.hpp"

namespace fast::optim {
namespace {

using fast::testing::expect_error;

TEST(OptimizerRegistry, NamesListEveryOptimizer) {
  EXPECT_EQ(optimizer_names(), (std::vector<std::string>{"sgd", "momentum", "nesterov", "adam", "adamw"}));
}

TEST(OptimizerRegistry, MakesTheNamedOptimizerForTheGivenSize) {
  for (const std::string& name : optimizer_names()) {
    auto opt = make_optimizer({.name = name}, 12);
    ASSERT_NE(opt, nullptr);
    EXPECT_EQ(opt->name(), name);
    EXPECT_EQ(opt->numel(), 12u);
  }
}

TEST(OptimizerRegistry, StepTrafficCountsParamsGradsAndEachStateBuffer) {
  // 12 floats = 48 bytes: params read + written, grads read (3 x 48), plus 2 x 48 per state buffer.
  const std::vector<std::pair<std::string, std::size_t>> states{
      {"sgd", 0}, {"momentum", 1}, {"nesterov", 1}, {"adam", 2}, {"adamw", 2}};
  for (const auto& [name, buffers] : states) {
    auto opt = make_optimizer({.name = name}, 12);
    EXPECT_EQ(opt->state_buffers(), buffers) << name;
    EXPECT_DOUBLE_EQ(opt->step_traffic_bytes(), 48.0 * (3 + 2 * static_cast<double>(buffers))) << name;
  }
}

TEST(OptimizerRegistry, UnknownNameListsTheAllowedNames) {
  expect_error<InvalidArgument>([] { make_optimizer({.name = "rmsprop"}, 1); },
                                {"OptimizerOptions.name", "'rmsprop'", "sgd, momentum, nesterov, adam, adamw"});
}

TEST(OptimizerOptions, NegativeLrIsRejectedForEveryOptimizer) {
  for (const std::string& name : optimizer_names())
    expect_error<InvalidArgument>([&] { make_optimizer({.name = name, .lr = -0.1}, 1); },
                                  {"OptimizerOptions.lr", name, "finite value >= 0", "got -0.1"});
}

TEST(OptimizerOptions, NegativeWeightDecayIsRejectedForEveryOptimizer) {
  for (const std::string& name : optimizer_names())
    expect_error<InvalidArgument>([&] { make_optimizer({.name = name, .weight_decay = -1}, 1); },
                                  {"OptimizerOptions.weight_decay", "finite value >= 0", "got -1"});
}

TEST(OptimizerOptions, MomentumMustBePositiveForMomentumAndNesterov) {
  for (const char* name : {"momentum", "nesterov"})
    expect_error<InvalidArgument>([&] { make_optimizer({.name = name, .momentum = 0}, 1); },
                                  {"OptimizerOptions.momentum", name, "> 0 (without momentum: optimizer sgd)", "got 0"});
  EXPECT_NO_THROW(make_optimizer({.name = "sgd", .momentum = -1, .dampening = 5}, 1));  // ignored by plain SGD
}

TEST(OptimizerOptions, DampeningOutsideUnitIntervalIsRejected) {
  expect_error<InvalidArgument>([] { make_optimizer({.name = "momentum", .dampening = 1.5}, 1); },
                                {"OptimizerOptions.dampening", "[0, 1]", "got 1.5"});
}

TEST(OptimizerOptions, NesterovRequiresZeroDampening) {
  expect_error<InvalidArgument>([] { make_optimizer({.name = "nesterov", .dampening = 0.1}, 1); },
                                {"OptimizerOptions.dampening", "nesterov requires zero dampening", "got 0.1"});
}

TEST(OptimizerOptions, BetasOutsideHalfOpenUnitIntervalAreRejected) {
  for (const char* name : {"adam", "adamw"}) {
    expect_error<InvalidArgument>([&] { make_optimizer({.name = name, .beta1 = 1.0}, 1); },
                                  {"OptimizerOptions.beta1", name, "[0, 1)", "got 1"});
    expect_error<InvalidArgument>([&] { make_optimizer({.name = name, .beta2 = -0.5}, 1); },
                                  {"OptimizerOptions.beta2", "[0, 1)", "got -0.5"});
  }
}

TEST(OptimizerOptions, EpsMustBePositive) {
  expect_error<InvalidArgument>([] { make_optimizer({.name = "adam", .eps = 0}, 1); },
                                {"OptimizerOptions.eps", "finite value > 0", "got 0"});
}

TEST(OptimizerStep, WrongSizesAreRejectedNamingBothSizesAndStateIsKept) {
  auto opt = make_optimizer({.name = "momentum"}, 4);
  std::vector<float> p(3, 1.0f);
  const std::vector<float> g(4, 1.0f);
  expect_error<InvalidArgument>([&] { opt->step(p, g, 0.1); },
                                {"momentum step", "params has 3 elements and grads 4", "optimizer's 4"});
  EXPECT_EQ(p, std::vector<float>(3, 1.0f));
  // The failed call was not a step: the next one still uses the gradient as the first buffer.
  std::vector<float> q(4, 1.0f);
  opt->step(q, g, 0.1);
  EXPECT_FLOAT_EQ(q[0], 0.9f);
}

TEST(OptimizerStep, NegativeOrNonFiniteLrIsRejected) {
  auto opt = make_optimizer({.name = "adam"}, 2);
  std::vector<float> p(2, 1.0f);
  const std::vector<float> g(2, 1.0f);
  expect_error<InvalidArgument>([&] { opt->step(p, g, -1e-3); }, {"adam step", "lr", "got -0.001"});
  expect_error<InvalidArgument>([&] { opt->step(p, g, std::nan("")); }, {"adam step", "lr", "got nan"});
}

TEST(OptimizerStep, OverlappingParamsAndGradsAreRejected) {
  auto opt = make_optimizer({.name = "sgd"}, 4);
  std::vector<float> buf(6, 1.0f);
  std::span<float> all(buf);
  expect_error<InvalidArgument>([&] { opt->step(all.subspan(0, 4), all.subspan(2, 4), 0.1); }, {"sgd step", "overlap"});
}

}  // namespace
}  // namespace fast::optim
