#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include <torch/types.h>

#include "fast/adapters/torch/models.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

// (in*out + out) per Linear, (in_c*out_c*k*k + out_c) per Conv2d.
constexpr std::int64_t linear(std::int64_t in, std::int64_t out) { return in * out + out; }
constexpr std::int64_t conv(std::int64_t in_c, std::int64_t out_c, std::int64_t k) { return in_c * out_c * k * k + out_c; }
constexpr std::int64_t kMlpParams = linear(784, 256) + linear(256, 128) + linear(128, 10);
constexpr std::int64_t kCnnParams = conv(1, 32, 3) + conv(32, 64, 3) + linear(64 * 5 * 5, 128) + linear(128, 10);

TEST(ModelZoo, NamesAreMlpAndCnn) { EXPECT_EQ(model_names(), (std::vector<std::string>{"mlp", "cnn"})); }

TEST(ModelZoo, ParameterCountsMatchLayerFormulas) {
  static_assert(kMlpParams == 235146 && kCnnParams == 225034);
  EXPECT_EQ(parameter_count("mlp"), kMlpParams);
  EXPECT_EQ(parameter_count("cnn"), kCnnParams);
  EXPECT_LT(parameter_count("cnn"), 500000);
  std::int64_t counted = 0;
  for (const auto& p : make_model("cnn")->parameters()) counted += p.numel();
  EXPECT_EQ(counted, kCnnParams);
}

TEST(ModelZoo, EveryModelMapsImagesToTenLogits) {
  ::torch::NoGradGuard no_grad;
  for (const auto& name : model_names()) {
    auto model = make_model(name);
    const ::torch::Tensor out = model->forward(::torch::randn({7, 1, 28, 28}));
    EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{7, 10})) << name;
  }
}

TEST(ModelZoo, UnknownNameIsInvalidArgumentListingAllowedNames) {
  try {
    make_model("resnet");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'resnet'"), std::string::npos) << what;
    EXPECT_NE(what.find("mlp, cnn"), std::string::npos) << what;
  }
  EXPECT_THROW(initial_parameters("", 1), InvalidArgument);
  EXPECT_THROW(model_flops_per_sample("MLP"), InvalidArgument);
}

TEST(ModelZoo, FlopsPerSampleIsSixTimesMultiplyAdds) {
  // mlp: 784*256 + 256*128 + 128*10 MACs.
  EXPECT_DOUBLE_EQ(model_flops_per_sample("mlp"), 6.0 * (784 * 256 + 256 * 128 + 128 * 10));
  // cnn: conv1 26*26 outputs x 32 x 1*3*3; conv2 11*11 x 64 x 32*3*3; then 1600*128 and 128*10.
  EXPECT_DOUBLE_EQ(model_flops_per_sample("cnn"),
                   6.0 * (26 * 26 * 32 * 9 + 11 * 11 * 64 * 32 * 9 + 1600 * 128 + 128 * 10));
}

TEST(ModelZoo, InitialParametersSameSeedSameBytesOtherSeedDiffers) {
  for (const auto& name : model_names()) {
    const auto a = initial_parameters(name, 42);
    const auto b = initial_parameters(name, 42);
    const auto c = initial_parameters(name, 43);
    ASSERT_EQ(static_cast<std::int64_t>(a.size()), parameter_count(name));
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << name;
    std::size_t same = 0;
    for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == c[i];
    EXPECT_LT(same, a.size() / 100) << name;
  }
}

TEST(ModelZoo, InitialParametersIgnoreTheGlobalGenerator) {
  ::torch::manual_seed(1);
  const auto a = initial_parameters("mlp", 5);
  ::torch::manual_seed(2);
  (void)::torch::rand({1000});
  const auto b = initial_parameters("mlp", 5);
  EXPECT_EQ(a, b);
}

TEST(ModelZoo, InitialParametersFromFourThreadsAtOnceAreIdentical) {
  const auto mlp = initial_parameters("mlp", 7);
  const auto cnn = initial_parameters("cnn", 7);
  std::vector<std::vector<float>> got(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&got, t] {
      got[2 * t] = initial_parameters("mlp", 7);
      (void)::torch::randn({256});  // other users of libtorch's global generator
      got[2 * t + 1] = initial_parameters("cnn", 7);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(got[2 * t], mlp) << "thread " << t;
    EXPECT_EQ(got[2 * t + 1], cnn) << "thread " << t;
  }
}

TEST(ModelZoo, InitialParametersAreUniformWithinOneOverSqrtFanIn) {
  // cnn layout: conv1 (fan_in 9), conv2 (288), fc1 (1600), fc2 (128); weight then bias each.
  const auto values = initial_parameters("cnn", 3);
  const std::vector<std::pair<std::int64_t, double>> blocks = {
      {conv(1, 32, 3), 9}, {conv(32, 64, 3), 288}, {linear(1600, 128), 1600}, {linear(128, 10), 128}};
  std::size_t offset = 0;
  for (const auto& [count, fan_in] : blocks) {
    const double bound = 1.0 / std::sqrt(fan_in);
    double max_abs = 0, sum = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      const double v = values[offset + static_cast<std::size_t>(i)];
      ASSERT_LE(std::abs(v), bound) << "fan_in " << fan_in;
      max_abs = std::max(max_abs, std::abs(v));
      sum += v;
    }
    EXPECT_GT(max_abs, 0.9 * bound) << "fan_in " << fan_in;
    EXPECT_LT(std::abs(sum / static_cast<double>(count)), 0.2 * bound) << "fan_in " << fan_in;
    offset += static_cast<std::size_t>(count);
  }
  EXPECT_EQ(offset, values.size());
}

TEST(ModelZoo, InitialParametersLoadIntoAReplica) {
  auto model = make_model("mlp");
  Replica replica(*model);
  const auto values = initial_parameters("mlp", 11);
  replica.load(core::ConstView(std::span<const float>(values)));
  EXPECT_TRUE(::torch::equal(model->parameters().front().detach().flatten(),
                             ::torch::tensor(std::vector<float>(values.begin(), values.begin() + 784 * 256))));
}

}  // namespace
}  // namespace fast::torch
