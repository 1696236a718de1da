// Evaluator: consensus distance, replica accuracies and the representative-model policies.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fast/adapters/torch/evaluator.hpp"
#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/core/env.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/training/environment.hpp"

namespace fast::torch {
namespace {

// Replica r = x0 + 0.01 r in every coordinate, for r = 0, 1, 2: the average is x0 + 0.01, so the
// consensus distance is (1/3) (0.01^2 + 0 + 0.01^2) * dim.
TEST(Evaluator, ConsensusDistanceAndPoliciesOnKnownReplicas) {
  const FashionMnist data = load_fashion_mnist(core::env_string(training::training_environment(), "FAST_DATA_DIR"));
  const std::vector<float> x0 = initial_parameters("mlp", 1);
  for (FinalModel policy : {FinalModel::average, FinalModel::rank0, FinalModel::best}) {
    std::vector<RoundResult> results(3);
    std::vector<std::vector<float>> reps(3);
    runtime::threads::World world({.size = 3});
    world.run([&](runtime::Context& ctx) {
      Model model = make_model("mlp");
      Replica replica(model);
      std::vector<float> x = x0;
      for (float& v : x) v += 0.01f * static_cast<float>(ctx.rank());
      replica.load(core::ConstView(std::span<const float>(x)));
      strategy::Worker worker(ctx, {.strategy = {.name = "local-sgd"}},
                              {.params = replica.param_span(), .grads = replica.grad_span()});
      Evaluator evaluator(worker, replica, model, data.test, policy);
      results[ctx.rank()] = evaluator.run();
      reps[ctx.rank()].assign(evaluator.representative().begin(), evaluator.representative().end());
      // run() leaves the replica as it was.
      EXPECT_EQ(std::vector<float>(replica.param_span().begin(), replica.param_span().end()), x);
    });
    const double expected = (2.0 / 3.0) * 1e-4 * static_cast<double>(x0.size());
    for (const RoundResult& r : results) {
      EXPECT_NEAR(r.consensus_distance, expected, 1e-3 * expected);
      EXPECT_LE(r.replica_accuracy_min, r.replica_accuracy_max);
      EXPECT_EQ(r.representative.samples, 10000);
    }
    EXPECT_EQ(reps[1], reps[0]);  // every worker holds the same representative
    EXPECT_EQ(reps[2], reps[0]);
    if (policy == FinalModel::rank0) {
      EXPECT_EQ(results[0].representative_rank, 0);
      EXPECT_EQ(reps[0], x0);
    }
    if (policy == FinalModel::best) {
      // The best replica, scored again in slices: its accuracy is the maximum (one sample of slack
      // for a different batch split in the matrix products).
      EXPECT_NEAR(results[0].representative.accuracy, results[0].replica_accuracy_max, 1e-4);
    }
    if (policy == FinalModel::average) {
      for (std::size_t i = 0; i < x0.size(); i += 997) EXPECT_NEAR(reps[0][i], x0[i] + 0.01f, 1e-6);
    }
  }
}

// A round holds its representative in the replica's gradient (no buffer of its own), the
// parameters untouched; a second round, after release_representative(), scores the same
// representative as the first.
TEST(Evaluator, ARoundHoldsTheRepresentativeInTheGradient) {
  const FashionMnist data = load_fashion_mnist(core::env_string(training::training_environment(), "FAST_DATA_DIR"));
  const std::vector<float> x0 = initial_parameters("mlp", 1);
  for (FinalModel policy : {FinalModel::average, FinalModel::rank0, FinalModel::best}) {
    runtime::threads::World world({.size = 2});
    world.run([&](runtime::Context& ctx) {
      Model model = make_model("mlp");
      Replica replica(model);
      std::vector<float> x = x0;
      for (float& v : x) v += 0.02f * static_cast<float>(ctx.rank());
      replica.load(core::ConstView(std::span<const float>(x)));
      strategy::Worker worker(ctx, {.strategy = {.name = "local-sgd"}},
                              {.params = replica.param_span(), .grads = replica.grad_span()});
      Evaluator evaluator(worker, replica, model, data.test, policy);
      const RoundResult mid = evaluator.run(true);
      EXPECT_EQ(evaluator.representative().data(), replica.grad_span().data());
      const std::vector<float> rep(evaluator.representative().begin(), evaluator.representative().end());
      evaluator.release_representative();
      EXPECT_TRUE(evaluator.representative().empty());
      for (float& g : replica.grad_span()) g = 7.0f;  // a step's gradient: the next round overwrites it

      const RoundResult last = evaluator.run(true);
      EXPECT_EQ(evaluator.representative().data(), replica.grad_span().data());
      EXPECT_EQ(std::vector<float>(evaluator.representative().begin(), evaluator.representative().end()), rep);
      EXPECT_EQ(last.representative.accuracy, mid.representative.accuracy);
      EXPECT_EQ(last.representative.loss, mid.representative.loss);
      EXPECT_EQ(last.consensus_distance, mid.consensus_distance);
      EXPECT_EQ(last.representative_rank, mid.representative_rank);
      EXPECT_EQ(std::vector<float>(replica.param_span().begin(), replica.param_span().end()), x);
    });
  }
}

TEST(Evaluator, UnknownPolicyListsTheNames) {
  try {
    parse_final_model("median");
    FAIL() << "no throw";
  } catch (const core::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("expected one of: average, rank0, best"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fast::torch
