#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fast/optim/adam.hpp"
#include "fast/optim/optimizer.hpp"

namespace fast::optim {
namespace {

TEST(Adam, FirstStepMovesEachParameterByLrTimesSignOfGradient) {
  // t = 1: m = (1 - b1) g, v = (1 - b2) g^2, so the step is lr * g / (|g| + eps): lr * sign(g) up to eps.
  const double lr = 0.01, eps = 1e-8;
  auto opt = make_optimizer({.name = "adam", .eps = eps}, 6);
  std::vector<float> p{0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  const std::vector<float> g{3.0f, -0.25f, 1e-3f, -1e-6f, 1e-8f, 0.0f};
  opt->step(p, g, lr);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double gi = g[i];
    const double expected = 0.5 - lr * gi / (std::abs(gi) + eps);
    EXPECT_NEAR(p[i], expected, 1e-7) << "g = " << gi;
  }
  EXPECT_NEAR(p[4], 0.5 - lr / 2, 1e-7);  // |g| = eps: half a step
  EXPECT_EQ(p[5], 0.5f);                  // no gradient, no move
}

TEST(Adam, ConstantGradientMovesByLrEveryStep) {
  // Bias correction makes m_hat = g and v_hat = g^2 exactly, so every step is lr * g / (|g| + eps).
  const double lr = 0.001, g = -0.3;
  auto opt = make_optimizer({.name = "adam"}, 5);
  std::vector<float> p(5, 1.0f);
  const std::vector<float> grads(5, static_cast<float>(g));
  for (int k = 1; k <= 50; ++k) {
    opt->step(p, grads, lr);
    const double expected = 1.0 + k * lr;
    for (float x : p) EXPECT_NEAR(x, expected, 1e-5) << "after " << k << " steps";
  }
}

TEST(Adam, SecondStepFollowsBiasCorrectedMoments) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, g1 = 1.0, g2 = -2.0;
  auto opt = make_optimizer({.name = "adam", .beta1 = b1, .beta2 = b2, .eps = eps}, 1);
  std::vector<float> p{0.0f};
  opt->step(p, std::vector<float>{static_cast<float>(g1)}, lr);
  opt->step(p, std::vector<float>{static_cast<float>(g2)}, lr);
  const double m = b1 * (1 - b1) * g1 + (1 - b1) * g2;
  const double v = b2 * (1 - b2) * g1 * g1 + (1 - b2) * g2 * g2;
  const double step2 = lr / (1 - b1 * b1) * m / (std::sqrt(v) / std::sqrt(1 - b2 * b2) + eps);
  EXPECT_NEAR(p[0], -lr * g1 / (g1 + eps) - step2, 1e-6);
}

TEST(Adam, WeightDecayIsAddedToTheGradient) {
  // g = 0, wd p = 0.1: Adam normalises the L2 term, moving by about lr whatever wd is.
  auto opt = make_optimizer({.name = "adam", .weight_decay = 0.1}, 1);
  std::vector<float> p{1.0f};
  const std::vector<float> g{0.0f};
  opt->step(p, g, 0.01);
  EXPECT_NEAR(p[0], 1.0 - 0.01 * 0.1 / (0.1 + 1e-8), 1e-7);
}

TEST(AdamW, DecoupledDecayShrinksParamsByLrTimesWeightDecay) {
  // g = 0 keeps both moments at 0, so only the decay p *= 1 - lr wd acts.
  const double lr = 0.1, wd = 0.5;
  auto opt = make_optimizer({.name = "adamw", .weight_decay = wd}, 2);
  std::vector<float> p{2.0f, -4.0f};
  const std::vector<float> g{0.0f, 0.0f};
  for (int k = 1; k <= 10; ++k) {
    opt->step(p, g, lr);
    EXPECT_NEAR(p[0], 2.0 * std::pow(1 - lr * wd, k), 1e-6) << "after " << k << " steps";
    EXPECT_NEAR(p[1], -4.0 * std::pow(1 - lr * wd, k), 1e-6) << "after " << k << " steps";
  }
}

TEST(AdamW, DecayIsAppliedBeforeTheAdamUpdate) {
  // p = 1 * (1 - 0.1 * 0.1) - 0.1 * 1 / (1 + eps)
  auto opt = make_optimizer({.name = "adamw", .weight_decay = 0.1}, 1);
  std::vector<float> p{1.0f};
  const std::vector<float> g{1.0f};
  opt->step(p, g, 0.1);
  EXPECT_NEAR(p[0], 0.99 - 0.1, 1e-7);
}

TEST(AdamW, DecayUsesTheStepLearningRate) {
  auto opt = make_optimizer({.name = "adamw", .lr = 1.0, .weight_decay = 0.5}, 1);
  std::vector<float> p{1.0f};
  const std::vector<float> g{0.0f};
  opt->step(p, g, 0.0);
  EXPECT_EQ(p[0], 1.0f);
  opt->step(p, g, 0.2);
  EXPECT_FLOAT_EQ(p[0], 0.9f);
}

TEST(AdamW, WithoutWeightDecayEqualsAdam) {
  auto adam = make_optimizer({.name = "adam"}, 3);
  auto adamw = make_optimizer({.name = "adamw"}, 3);
  std::vector<float> a{1.0f, 2.0f, 3.0f}, b = a;
  for (int k = 0; k < 10; ++k) {
    const std::vector<float> g{0.1f * k, -1.0f, 0.5f - 0.2f * k};
    adam->step(a, g, 0.01);
    adamw->step(b, g, 0.01);
  }
  EXPECT_EQ(a, b);
}

TEST(Adam, NameAndNumelAreTheConstructionOnes) {
  for (const char* name : {"adam", "adamw"}) {
    Adam opt({.name = name}, 9);
    EXPECT_EQ(opt.name(), name);
    EXPECT_EQ(opt.numel(), 9u);
  }
}

}  // namespace
}  // namespace fast::optim
