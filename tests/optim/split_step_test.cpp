// Optimizer::take_gradient / apply_taken: the one-call step() is the reference (its rules are
// checked against closed forms in sgd_test and adam_test, and against libtorch in optim_parity_test).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/error_message.hpp"
#include "common/random_vectors.hpp"
#include "fast/core/error.hpp"
#include "fast/optim/optimizer.hpp"

namespace fast::optim {
namespace {

using fast::testing::expect_error;
using fast::testing::gaussian;

// Bitwise: the split must round exactly as the one-call step.
void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

// The rules that take the gradient first.
std::vector<OptimizerOptions> splittable() {
  return {{.name = "momentum"},
          {.name = "momentum", .momentum = 0.8, .dampening = 0.3},
          {.name = "adam"},
          {.name = "adam", .beta1 = 0.5, .beta2 = 0.9, .eps = 1e-3},
          {.name = "adamw", .weight_decay = 0.05},
          {.name = "adamw"}};
}

// Five steps at changing rates. Between take and apply the parameters change (as a gossip's mix
// changes them) and the gradient's storage is overwritten: the result equals step() on the changed
// parameters with the original gradient, state and step count included.
TEST(SplitStep, TakeThenApplyEqualsStepOnTheParametersApplyFinds) {
  constexpr std::size_t n = 1003;  // not a multiple of any vector width
  for (const OptimizerOptions& options : splittable()) {
    const std::string what = options.name + " dampening " + std::to_string(options.dampening) + " weight_decay " +
                             std::to_string(options.weight_decay);
    auto one = make_optimizer(options, n);
    auto split = make_optimizer(options, n);
    ASSERT_TRUE(split->takes_gradient_first()) << what;
    std::vector<float> p_one = gaussian(n, 1);
    std::vector<float> p_split = p_one;
    for (std::uint32_t t = 0; t < 5; ++t) {
      const std::vector<float> g = gaussian(n, 100 + t);
      const double lr = 0.1 / (1.0 + t);
      std::vector<float> g_split = g;
      split->take_gradient(g_split);
      std::fill(g_split.begin(), g_split.end(), std::numeric_limits<float>::quiet_NaN());  // not read again
      for (float& x : p_split) x = 0.5f * x + 0.25f;
      for (float& x : p_one) x = 0.5f * x + 0.25f;
      split->apply_taken(p_split, lr);
      one->step(p_one, g, lr);
      expect_same_bits(p_split, p_one, what + " params, step " + std::to_string(t));
      const std::vector<std::span<float>> s1 = one->state();
      const std::vector<std::span<float>> s2 = split->state();
      ASSERT_EQ(s1.size(), s2.size());
      for (std::size_t b = 0; b < s1.size(); ++b)
        expect_same_bits({s1[b].begin(), s1[b].end()}, {s2[b].begin(), s2[b].end()}, what + " state");
      EXPECT_EQ(split->steps_taken(), one->steps_taken()) << what;
    }
  }
}

// Where the update reads the parameters with the gradient (L2 weight decay) or the gradient itself
// (plain SGD, Nesterov), the gradient cannot go first.
TEST(SplitStep, OnlyRulesWhoseUpdateLiesInTheirStateTakeTheGradientFirst) {
  EXPECT_FALSE(make_optimizer({.name = "sgd"}, 4)->takes_gradient_first());
  EXPECT_FALSE(make_optimizer({.name = "nesterov"}, 4)->takes_gradient_first());
  EXPECT_FALSE(make_optimizer({.name = "momentum", .weight_decay = 1e-4}, 4)->takes_gradient_first());
  EXPECT_FALSE(make_optimizer({.name = "adam", .weight_decay = 1e-4}, 4)->takes_gradient_first());
  EXPECT_TRUE(make_optimizer({.name = "momentum"}, 4)->takes_gradient_first());
  EXPECT_TRUE(make_optimizer({.name = "adam"}, 4)->takes_gradient_first());
  EXPECT_TRUE(make_optimizer({.name = "adamw", .weight_decay = 1e-4}, 4)->takes_gradient_first());

  auto nesterov = make_optimizer({.name = "nesterov"}, 2);
  std::vector<float> p(2, 1.0f);
  const std::vector<float> g(2, 1.0f);
  expect_error<InvalidUsage>([&] { nesterov->take_gradient(g); }, {"nesterov", "take_gradient", "call step()"});
  expect_error<InvalidUsage>([&] { nesterov->apply_taken(p, 0.1); }, {"nesterov", "apply_taken"});
}

TEST(SplitStep, CallsOutOfOrderAndWrongLengthsAreRejectedBeforeAnyChange) {
  for (const OptimizerOptions& options : splittable()) {
    auto opt = make_optimizer(options, 3);
    std::vector<float> p(3, 1.0f);
    const std::vector<float> g(3, 1.0f);
    expect_error<InvalidUsage>([&] { opt->apply_taken(p, 0.1); }, {"apply_taken", "no gradient taken"});
    expect_error<InvalidArgument>([&] { opt->take_gradient(std::vector<float>(2, 1.0f)); },
                                  {"take_gradient", "grads has 2 elements", "optimizer's 3"});
    opt->take_gradient(g);
    expect_error<InvalidUsage>([&] { opt->take_gradient(g); }, {"take_gradient", "not applied yet"});
    expect_error<InvalidUsage>([&] { opt->step(p, g, 0.1); }, {"step", "not applied yet"});
    std::vector<float> short_p(2, 1.0f);
    expect_error<InvalidArgument>([&] { opt->apply_taken(short_p, 0.1); }, {"apply_taken", "params has 2 elements"});
    expect_error<InvalidArgument>([&] { opt->apply_taken(p, -1.0); }, {"apply_taken", "lr", "got -1"});
    EXPECT_EQ(p, std::vector<float>(3, 1.0f)) << options.name;
    EXPECT_EQ(opt->steps_taken(), 0) << options.name;
    opt->apply_taken(p, 0.1);  // the taken gradient is still there to apply
    EXPECT_EQ(opt->steps_taken(), 1) << options.name;
    EXPECT_NE(p, std::vector<float>(3, 1.0f)) << options.name;
  }
}

}  // namespace
}  // namespace fast::optim
