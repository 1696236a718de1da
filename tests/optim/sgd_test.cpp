#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fast/optim/optimizer.hpp"
#include "fast/optim/sgd.hpp"

namespace fast::optim {
namespace {

// Sum over i = 1..k of the momentum buffer b_i = g (1 - mu^i) / (1 - mu) (dampening 0, b_1 = g).
double buffer_sum(double g, double mu, int k) {
  double s = 0;
  for (int i = 1; i <= k; ++i) s += g * (1 - std::pow(mu, i)) / (1 - mu);
  return s;
}

TEST(Sgd, PlainStepSubtractsLrTimesGradient) {
  auto opt = make_optimizer({.name = "sgd", .lr = 0.1}, 3);
  std::vector<float> p{1.0f, -2.0f, 3.0f};
  const std::vector<float> g{0.5f, 0.25f, -1.0f};
  opt->step(p, g, 0.1);
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  EXPECT_FLOAT_EQ(p[1], -2.025f);
  EXPECT_FLOAT_EQ(p[2], 3.1f);
}

TEST(Sgd, PlainIgnoresMomentumOptions) {
  auto opt = make_optimizer({.name = "sgd", .momentum = 0.9}, 1);
  std::vector<float> p{0.0f};
  const std::vector<float> g{1.0f};
  for (int k = 0; k < 5; ++k) opt->step(p, g, 0.1);
  EXPECT_FLOAT_EQ(p[0], -0.5f);
}

TEST(Sgd, WeightDecayAddsL2TermToGradient) {
  auto opt = make_optimizer({.name = "sgd", .weight_decay = 0.5}, 1);
  std::vector<float> p{2.0f};
  const std::vector<float> g{1.0f};
  opt->step(p, g, 0.1);  // 2 - 0.1 * (1 + 0.5 * 2)
  EXPECT_FLOAT_EQ(p[0], 1.8f);
}

TEST(Sgd, StepUsesItsLrArgumentNotTheBaseLr) {
  auto opt = make_optimizer({.name = "sgd", .lr = 1.0}, 1);
  std::vector<float> p{1.0f};
  const std::vector<float> g{1.0f};
  opt->step(p, g, 0.0);
  EXPECT_EQ(p[0], 1.0f);
  opt->step(p, g, 0.25);
  EXPECT_FLOAT_EQ(p[0], 0.75f);
}

TEST(Sgd, FirstMomentumStepUsesGradientAsBuffer) {
  // torch clones the first update into the buffer: dampening does not apply to it.
  auto opt = make_optimizer({.name = "momentum", .momentum = 0.9, .dampening = 0.5}, 2);
  std::vector<float> p{1.0f, 1.0f};
  const std::vector<float> g{2.0f, -4.0f};
  opt->step(p, g, 0.1);
  EXPECT_FLOAT_EQ(p[0], 0.8f);
  EXPECT_FLOAT_EQ(p[1], 1.4f);
}

TEST(Sgd, MomentumMatchesClosedFormOnConstantGradient) {
  const double lr = 0.05, mu = 0.9, g = 0.5;
  auto opt = make_optimizer({.name = "momentum", .momentum = mu}, 4);
  std::vector<float> p(4, 0.0f);
  const std::vector<float> grads(4, static_cast<float>(g));
  for (int k = 1; k <= 20; ++k) {
    opt->step(p, grads, lr);
    const double expected = -lr * buffer_sum(g, mu, k);
    for (float x : p) EXPECT_NEAR(x, expected, 1e-5 * std::abs(expected)) << "after " << k << " steps";
  }
}

TEST(Sgd, DampeningScalesLaterGradientsInTheBuffer) {
  const double lr = 0.1, mu = 0.5, tau = 0.25, g = 1.0;
  auto opt = make_optimizer({.name = "momentum", .momentum = mu, .dampening = tau}, 1);
  std::vector<float> p{0.0f};
  const std::vector<float> grads{static_cast<float>(g)};
  double b = g, expected = -lr * b;  // b_1 = g
  opt->step(p, grads, lr);
  EXPECT_NEAR(p[0], expected, 1e-6);
  for (int k = 2; k <= 6; ++k) {
    b = mu * b + (1 - tau) * g;
    expected -= lr * b;
    opt->step(p, grads, lr);
    EXPECT_NEAR(p[0], expected, 1e-6) << "after " << k << " steps";
  }
}

TEST(Sgd, NesterovMatchesClosedFormOnConstantGradient) {
  // update_i = g + mu * b_i, so p_k = -lr * (k g + mu * sum b_i).
  const double lr = 0.01, mu = 0.8, g = -2.0;
  auto opt = make_optimizer({.name = "nesterov", .momentum = mu}, 3);
  std::vector<float> p(3, 1.0f);
  const std::vector<float> grads(3, static_cast<float>(g));
  for (int k = 1; k <= 20; ++k) {
    opt->step(p, grads, lr);
    const double expected = 1.0 - lr * (k * g + mu * buffer_sum(g, mu, k));
    for (float x : p) EXPECT_NEAR(x, expected, 1e-5 * std::abs(expected)) << "after " << k << " steps";
  }
}

TEST(Sgd, MomentumWithWeightDecayBuffersTheDecayedGradient) {
  // First step: b = g + wd p; second: b = mu b + (g + wd p').
  auto opt = make_optimizer({.name = "momentum", .momentum = 0.5, .weight_decay = 0.1}, 1);
  std::vector<float> p{1.0f};
  const std::vector<float> g{1.0f};
  opt->step(p, g, 0.1);
  const double b1 = 1.0 + 0.1 * 1.0, p1 = 1.0 - 0.1 * b1;
  EXPECT_NEAR(p[0], p1, 1e-7);
  opt->step(p, g, 0.1);
  const double b2 = 0.5 * b1 + (1.0 + 0.1 * p1), p2 = p1 - 0.1 * b2;
  EXPECT_NEAR(p[0], p2, 1e-7);
}

TEST(Sgd, NameAndNumelAreTheConstructionOnes) {
  for (const char* name : {"sgd", "momentum", "nesterov"}) {
    Sgd opt({.name = name}, 7);
    EXPECT_EQ(opt.name(), name);
    EXPECT_EQ(opt.numel(), 7u);
  }
}

TEST(Sgd, EmptyBufferStepsAreNoOps) {
  auto opt = make_optimizer({.name = "nesterov"}, 0);
  std::vector<float> p;
  const std::vector<float> g;
  EXPECT_NO_THROW(opt->step(p, g, 0.1));
}

}  // namespace
}  // namespace fast::optim
