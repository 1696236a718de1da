// Acceptance: on identical gradient sequences, each FAST optimizer follows libtorch's own optimizer
// (torch::optim::SGD, Adam, AdamW) within 1e-6 relative (||fast - torch|| / ||torch||) at every one
// of 100 steps. The learning rate varies per step (warm-up + cosine LrSchedule) and is set on the
// torch optimizer's param group before each of its steps, as a training loop with a schedule does.

#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "fast/optim/optimizer.hpp"
#include "fast/optim/schedule.hpp"

namespace fast::optim {
namespace {

constexpr std::size_t kNumel = 10'007;  // not a multiple of any vector width: tails are compared too
constexpr int kSteps = 100;
constexpr double kTolerance = 1e-6;

struct Case {
  std::string label;
  OptimizerOptions options;
};
// gtest prints a parameter by its label (test names and failure messages).
void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

std::unique_ptr<torch::optim::Optimizer> make_torch(const OptimizerOptions& o, const torch::Tensor& p) {
  const std::vector<torch::Tensor> params{p};
  if (o.name == "sgd")
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(o.lr).weight_decay(o.weight_decay));
  if (o.name == "momentum" || o.name == "nesterov")
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(o.lr)
                                                           .momentum(o.momentum)
                                                           .dampening(o.dampening)
                                                           .weight_decay(o.weight_decay)
                                                           .nesterov(o.name == "nesterov"));
  if (o.name == "adam")
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  if (o.name == "adamw")
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  ADD_FAILURE() << "no torch optimizer for " << o.name;
  return nullptr;
}

class OptimParity : public ::testing::TestWithParam<Case> {};

TEST_P(OptimParity, FollowsLibtorchWithin1e6RelativeOver100Steps) {
  const Case& c = GetParam();
  torch::set_num_threads(1);
  std::mt19937 rng(20240611);
  std::normal_distribution<float> normal(0.0f, 1.0f);

  std::vector<float> ours(kNumel);
  for (float& x : ours) x = normal(rng);
  torch::Tensor theirs = torch::from_blob(ours.data(), {static_cast<std::int64_t>(kNumel)}, torch::kFloat32)
                             .clone()
                             .set_requires_grad(true);

  auto fast_opt = make_optimizer(c.options, kNumel);
  auto torch_opt = make_torch(c.options, theirs);
  ASSERT_NE(torch_opt, nullptr);
  const LrSchedule schedule(c.options.lr,
                            {.name = "cosine", .total_steps = kSteps, .min_lr_factor = 0.1, .warmup_steps = 10});

  std::vector<float> grads(kNumel);
  double worst_norm = 0, worst_elem = 0, worst_abs = 0;
  int identical_steps = 0;
  for (int step = 0; step < kSteps; ++step) {
    // Gradients of varied scale per element and per step, some exactly zero.
    const float scale = 0.1f + 0.02f * static_cast<float>(step % 7);
    for (std::size_t i = 0; i < kNumel; ++i) grads[i] = (i % 97 == 0) ? 0.0f : scale * normal(rng);
    const double lr = schedule.lr_at(step);

    fast_opt->step(ours, grads, lr);
    theirs.mutable_grad() =
        torch::from_blob(grads.data(), {static_cast<std::int64_t>(kNumel)}, torch::kFloat32).clone();
    for (auto& group : torch_opt->param_groups()) group.options().set_lr(lr);
    torch_opt->step();

    const torch::Tensor a = torch::from_blob(ours.data(), {static_cast<std::int64_t>(kNumel)}, torch::kFloat32);
    const torch::Tensor b = theirs.detach();
    const torch::Tensor diff = (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs();
    const double rel = diff.norm().item<double>() / b.to(torch::kFloat64).norm().item<double>();
    // Elementwise relative error, over elements away from 0 (|b| >= 1e-3) where it is meaningful.
    const torch::Tensor mag = b.to(torch::kFloat64).abs();
    const torch::Tensor elem = torch::where(mag >= 1e-3, diff / mag, torch::zeros_like(diff));
    worst_norm = std::max(worst_norm, rel);
    worst_elem = std::max(worst_elem, elem.max().item<double>());
    worst_abs = std::max(worst_abs, diff.max().item<double>());
    identical_steps += torch::equal(a, b) ? 1 : 0;
    ASSERT_LE(rel, kTolerance) << c.label << ": step " << step << ", ||fast - torch|| / ||torch|| = " << rel;
  }
  std::cout << "[parity] " << c.label << ": max over " << kSteps
            << " steps of ||fast-torch||/||torch|| = " << worst_norm
            << ", max elementwise rel (|torch| >= 1e-3) = " << worst_elem << ", max abs = " << worst_abs
            << ", bit-identical after " << identical_steps << "/" << kSteps << " steps\n";
  RecordProperty("max_norm_relative_error", std::to_string(worst_norm));
  RecordProperty("max_elementwise_relative_error", std::to_string(worst_elem));
  RecordProperty("bit_identical_steps", identical_steps);
}

INSTANTIATE_TEST_SUITE_P(
    Torch, OptimParity,
    ::testing::Values(Case{"sgd_weight_decay", {.name = "sgd", .lr = 0.1, .weight_decay = 1e-2}},
                      Case{"momentum",
                           {.name = "momentum", .lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 5e-4}},
                      Case{"nesterov", {.name = "nesterov", .lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4}},
                      Case{"adam", {.name = "adam", .lr = 1e-2, .weight_decay = 1e-3}},
                      Case{"adamw", {.name = "adamw", .lr = 1e-2, .weight_decay = 1e-2}}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.label; });

}  // namespace
}  // namespace fast::optim
