// Every strategy with every codec on the convex test problem (quadratic.hpp): 4 workers, equal
// pacing (paced.hpp, 250 rounds of 4 steps), a cosine learning-rate schedule from 0.1 to 0. Each
// worker starts at x = 0; the optimum is the mean of the centres, c*, at distance D = ||c*||.
// "Converges" is checked against the same strategy without a codec, run in the same test: the
// representative model ends within err_none + 0.1 D of c* (err_none is 0 to 0.002 D for every
// strategy but gosgd, whose mass-weighted objective leaves ~0.12 D, see gosgd_test.cpp), and the
// codec's traffic is metered with a ratio above 1 (threshold excepted, see below; powersgd's above 1
// only where the strategy hands its window the layout), below a fixed-width codec's bound. Every pair
// converges (docs/compression.md).

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fast/compress/codec.hpp"
#include "fast/runtime/threads/world.hpp"
#include "fast/strategy/worker.hpp"
#include "paced.hpp"
#include "quadratic.hpp"

namespace fast::strategy {
namespace {

using runtime::Context;

struct Config {
  std::string strategy;
  std::string mode;
};

std::string label(const Config& c, const std::string& codec) {
  return c.strategy + (c.mode.empty() ? "" : "/" + c.mode) + " x " + codec;
}

class CodecMatrix : public ::testing::TestWithParam<std::string> {};

// 16x12 matrix block + 8-element vector block, so powersgd has a matrix to factor (and its
// factors, with their block descriptions, are smaller than the matrix).
core::Layout test_layout() {
  core::Layout layout;
  layout.push_back({0, 192, 16, {16, 12}, "w"});
  layout.push_back({192, 8, 1, {8}, "b"});
  return layout;
}

void run_matrix(const std::string& codec) {
  constexpr std::size_t kDim = 200;
  constexpr int kWorkers = 4;
  const std::vector<Config> configs{{"allreduce", ""}, {"ps", "sync"}, {"ps", "async"}, {"ps", "ssp"},
                                    {"local-sgd", ""}, {"easgd", ""},  {"dpsgd", ""},   {"adpsgd", ""},
                                    {"gosgd", ""},     {"acid", ""}};
  const core::Layout layout = test_layout();
  double baseline = 0;
  double initial = 0;
  for (std::size_t i = 0; i < kDim; ++i) initial += std::pow(testing::mean_centre(kWorkers, i), 2);
  initial = std::sqrt(initial);
  for (const Config& config : configs) {
    for (const std::string& run_codec : {std::string("none"), codec}) {
      std::vector<float> final_model;
      std::vector<compress::CompressionStats> stats(kWorkers);
      runtime::threads::World world({.size = kWorkers, .op_timeout_seconds = 120});
      world.run([&](Context& ctx) {
        const int r = ctx.rank();
        std::vector<float> x(kDim, 0.0f), g(kDim, 0.0f);
        WorkerOptions options{.strategy = {.name = config.strategy, .period = 4, .seed = 3, .compress = run_codec},
                              .optimizer = {.name = "sgd", .lr = 0.1},
                              .schedule = {.name = "cosine"}};
        if (!config.mode.empty()) options.strategy.mode = config.mode;
        const testing::Pacing pacing{.steps_per_round = std::vector<int>(kWorkers, 4), .rounds = 250};
        options.schedule.total_steps = pacing.total_steps(r);
        Worker worker(ctx, options, {.params = x, .grads = g, .layout = layout});
        testing::run_paced(worker, pacing, x, g);
        worker.finish();
        std::vector<float> rep(kDim);
        worker.representative(rep);
        if (r == 0) final_model = rep;
        stats[static_cast<std::size_t>(r)] = worker.strategy().compression();
      });
      double err = 0;
      for (std::size_t i = 0; i < kDim; ++i) err += std::pow(final_model[i] - testing::mean_centre(kWorkers, i), 2);
      err = std::sqrt(err);
      std::printf("  %-34s error %.4f of %.4f (ratio %.1f)\n", label(config, run_codec).c_str(), err, initial,
                  stats[0].ratio());
      compress::CompressionStats all;
      for (const auto& s : stats) all.merge(s);
      if (run_codec == "none") {
        baseline = err;
        EXPECT_EQ(all.messages, 0u) << label(config, run_codec);
        if (codec == "none") break;
      } else {
        EXPECT_LE(err, baseline + 0.1 * initial)
            << label(config, run_codec) << " (without a codec: " << baseline << ")";
        EXPECT_GT(all.messages, 0u) << label(config, run_codec);
        // threshold is variable-size: once error feedback lifts most values over it, a message can
        // outweigh the dense tensor (indices + values), so its ratio is not bounded below.
        if (run_codec.rfind("threshold", 0) != 0) {
          EXPECT_GT(all.ratio(), 1.0) << label(config, run_codec);
        }
        // A fixed-width codec's ratio is below 32 bits over its bits per element (the f32 input
        // against its payload, which adds a header), whatever type the strategy keeps its model in.
        for (const auto& [name, bound] :
             {std::pair<const char*, double>{"fp16", 2}, {"bf16", 2}, {"int8", 4}, {"sign", 32}}) {
          if (run_codec == name) EXPECT_LT(all.ratio(), bound) << label(config, run_codec);
        }
      }
    }
  }
}

TEST_P(CodecMatrix, EveryStrategyConvergesOnTheQuadratic) { run_matrix(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Codecs, CodecMatrix,
                         ::testing::Values("none", "fp16", "bf16", "int8", "sign", "topk:ratio=0.1", "randk:ratio=0.25",
                                           "threshold:value=0.05", "powersgd:rank=2"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(0, info.param.find(':'));
                           return name;
                         });

}  // namespace
}  // namespace fast::strategy
