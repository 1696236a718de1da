// Statement 1 of the FAST proposal (sec. 3): with mini-batch SGD and every update delivered to every
// worker, the replicas are consistent — and synchronous gradient averaging over W workers of batch
// b is exactly mini-batch SGD with batch W*b on the same samples. Checked end to end on the real
// MLP and Fashion-MNIST: 4 workers x batch 16 against 1 worker x batch 64, 20 steps, same seed.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <torch/nn/functional/loss.h>

#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/loader.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/adapters/torch/threads.hpp"
#include "fast/core/env.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/worker.hpp"
#include "fast/training/environment.hpp"

namespace fast::torch {
namespace {

constexpr std::uint64_t kModelSeed = 3;
constexpr std::uint64_t kDataSeed = 11;
constexpr int kSteps = 20;

// Trains `workers` replicas of the MLP with batch `batch` each for kSteps; returns every replica.
std::vector<std::vector<float>> train(const FashionMnist& data, int workers, int batch, const std::string& optimizer) {
  const std::vector<float> init = initial_parameters("mlp", kModelSeed);
  std::vector<std::vector<float>> finals(workers);
  configure_torch_threads(workers);
  runtime::threads::World world({.size = workers});
  world.run([&](runtime::Context& ctx) {
    Model model = make_model("mlp");
    Replica replica(model);
    replica.load(core::ConstView(std::span<const float>(init)));
    ShardedLoader loader(data.train, ctx.rank(), workers, batch, kDataSeed);
    strategy::Worker worker(ctx, {.optimizer = {.name = optimizer, .lr = 0.1}},
                            {.params = replica.param_span(), .grads = replica.grad_span()});
    for (int s = 0; s < kSteps; ++s) {
      const Batch b = loader.batch(0, s);
      replica.zero_grad();
      ::torch::nn::functional::cross_entropy(model.forward(b.x), b.y).backward();
      worker.step();
    }
    auto p = replica.param_span();
    finals[ctx.rank()].assign(p.begin(), p.end());
  });
  return finals;
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

class Statement1 : public ::testing::TestWithParam<std::string> {};

TEST_P(Statement1, FourWorkersOfBatch16MatchOneWorkerOfBatch64) {
  const FashionMnist data = load_fashion_mnist(core::env_string(training::training_environment(), "FAST_DATA_DIR"));
  const auto one = train(data, 1, 64, GetParam());
  const auto four = train(data, 4, 16, GetParam());
  for (int w = 1; w < 4; ++w) EXPECT_EQ(four[w], four[0]) << "replica " << w << " is not consistent with replica 0";
  const double rel = relative_difference(four[0], one[0]);
  EXPECT_LE(rel, 1e-5) << "4x16 vs 1x64 after " << kSteps << " steps";
  // The runs did move: the parameters are far from their initial values.
  EXPECT_GT(relative_difference(one[0], initial_parameters("mlp", kModelSeed)), 1e-3);
  RecordProperty("relative_difference", std::to_string(rel));
}

INSTANTIATE_TEST_SUITE_P(Sgd, Statement1, ::testing::Values("sgd", "momentum"));

}  // namespace
}  // namespace fast::torch
