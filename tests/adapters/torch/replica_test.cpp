#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include "fast/adapters/torch/models.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

::torch::Tensor loss_of(Model& model, const ::torch::Tensor& x, const ::torch::Tensor& y) {
  return ::torch::nll_loss(::torch::log_softmax(model.forward(x), 1), y);
}

std::vector<::torch::Tensor> parameters_of(Model& model) {
  std::vector<::torch::Tensor> out;
  for (auto& [name, p] : model.named_parameters()) out.push_back(p);
  return out;
}

std::vector<float> concat_grads(Model& model) {
  std::vector<float> out;
  for (const auto& p : parameters_of(model)) {
    const ::torch::Tensor g = p.grad().contiguous();
    out.insert(out.end(), g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  }
  return out;
}

std::vector<float> concat_values(Model& model) {
  std::vector<float> out;
  for (const auto& p : parameters_of(model)) {
    const ::torch::Tensor v = p.detach().contiguous();
    out.insert(out.end(), v.data_ptr<float>(), v.data_ptr<float>() + v.numel());
  }
  return out;
}

class ReplicaOfModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ReplicaOfModel, FlatGradEqualsConcatenatedGradsOfUntouchedClone) {
  ::torch::manual_seed(1);
  Model model = make_model(GetParam());
  Model cloned = make_model(GetParam());  // the same values, never re-pointed
  {
    ::torch::NoGradGuard no_grad;
    const auto from = parameters_of(model);
    auto to = parameters_of(cloned);
    ASSERT_EQ(from.size(), to.size());
    for (std::size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  }
  Replica replica(model);
  const ::torch::Tensor x = ::torch::randn({8, 1, 28, 28});
  const ::torch::Tensor y = ::torch::randint(0, 10, {8}, ::torch::kInt64);
  loss_of(model, x, y).backward();
  loss_of(cloned, x, y).backward();
  const std::vector<float> expected = concat_grads(cloned);
  ASSERT_EQ(expected.size(), replica.numel());
  const auto flat = replica.grad_span();
  for (std::size_t i = 0; i < expected.size(); ++i) ASSERT_NEAR(flat[i], expected[i], 1e-6f) << "element " << i;
  // The flat parameters are the clone's values too.
  const std::vector<float> values = concat_values(cloned);
  EXPECT_EQ(std::memcmp(values.data(), replica.param_span().data(), values.size() * sizeof(float)), 0);
}

TEST_P(ReplicaOfModel, GradPointersStayInPlaceAcrossSteps) {
  Model model = make_model(GetParam());
  Replica replica(model);
  const ::torch::Tensor x = ::torch::randn({4, 1, 28, 28});
  const ::torch::Tensor y = ::torch::randint(0, 10, {4}, ::torch::kInt64);
  for (int step = 0; step < 3; ++step) {
    replica.zero_grad();
    loss_of(model, x, y).backward();
    auto params = replica.param_span();
    const auto grads = replica.grad_span();
    for (std::size_t i = 0; i < params.size(); ++i) params[i] -= 0.1f * grads[i];  // an SGD step
    std::size_t offset = 0;
    for (const auto& p : parameters_of(model)) {
      ASSERT_TRUE(p.grad().defined());
      EXPECT_EQ(p.data_ptr<float>(), replica.param_span().data() + offset) << "step " << step;
      EXPECT_EQ(p.grad().data_ptr<float>(), replica.grad_span().data() + offset) << "step " << step;
      offset += static_cast<std::size_t>(p.numel());
    }
    EXPECT_EQ(offset, replica.numel());
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ReplicaOfModel, ::testing::Values("mlp", "cnn", "resnet"));

TEST(Replica, WritingParamsChangesForwardOutput) {
  Model model = make_model("mlp");
  Replica replica(model);
  const ::torch::Tensor x = ::torch::randn({3, 1, 28, 28});
  ::torch::NoGradGuard no_grad;
  // All weights zero, last bias = 0..9: every output row is exactly 0..9.
  auto params = replica.param_span();
  std::fill(params.begin(), params.end(), 0.0f);
  for (int k = 0; k < 10; ++k) params[params.size() - 10 + static_cast<std::size_t>(k)] = static_cast<float>(k);
  const ::torch::Tensor out = model.forward(x);
  const ::torch::Tensor expected = ::torch::arange(10, ::torch::kFloat32).expand({3, 10});
  EXPECT_TRUE(::torch::equal(out, expected)) << out;
}

TEST(Replica, LoadCopiesAFlatVectorIn) {
  Model model = make_model("cnn");
  Replica replica(model);
  std::vector<float> values(replica.numel());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 97) * 0.01f;
  replica.load(core::ConstView(std::span<const float>(values)));
  EXPECT_EQ(concat_values(model), values);
}

// Built with initial values, on the CPU and staged: the module computes with them, not with its own
// (NaN here), and the gradients start at zero.
TEST(Replica, BuiltWithInitialValuesHoldsThemAndNotTheModules) {
  for (const bool staged : {false, true}) {
    Model model = make_model("mlp");
    {
      ::torch::NoGradGuard no_grad;
      for (auto& [name, p] : model.named_parameters()) p.fill_(std::numeric_limits<float>::quiet_NaN());
    }
    std::vector<float> values;
    for (const auto& [name, p] : model.named_parameters()) values.resize(values.size() + p.numel());
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>(static_cast<int>(i % 89) - 44) * 1e-3f;
    Replica replica(model, {.device = ::torch::Device(::torch::kCPU), .staged = staged},
                    core::ConstView(std::span<const float>(values)));
    EXPECT_EQ(concat_values(model), values) << (staged ? "staged" : "cpu");
    const auto params = replica.param_span();
    EXPECT_TRUE(std::equal(params.begin(), params.end(), values.begin())) << (staged ? "staged" : "cpu");
    const auto grads = replica.grad_span();
    EXPECT_TRUE(std::all_of(grads.begin(), grads.end(), [](float g) { return g == 0.0f; }));
  }
}

// Initial values of another length or type are refused, naming what was expected.
TEST(Replica, BuiltWithInitialValuesOfAnotherLengthOrTypeIsRefused) {
  Model model = make_model("mlp");
  std::int64_t total = 0;
  for (const auto& [name, p] : model.named_parameters()) total += p.numel();
  std::vector<float> short_vec(static_cast<std::size_t>(total) - 1);
  try {
    Replica replica(model, {}, core::ConstView(std::span<const float>(short_vec)));
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("expected {} values", total)), std::string::npos) << e.what();
  }
  std::vector<double> doubles(static_cast<std::size_t>(total));
  EXPECT_THROW(Replica(model, {}, core::ConstView(std::span<const double>(doubles))), InvalidArgument);
  EXPECT_THROW(Replica(model, {}, core::ConstView()), InvalidArgument);
}

TEST(Replica, LoadRejectsWrongSizeOrType) {
  Model model = make_model("mlp");
  Replica replica(model);
  std::vector<float> short_vec(replica.numel() - 1);
  EXPECT_THROW(replica.load(core::ConstView(std::span<const float>(short_vec))), InvalidArgument);
  std::vector<double> doubles(replica.numel());
  EXPECT_THROW(replica.load(core::ConstView(std::span<const double>(doubles))), InvalidArgument);
}

TEST(Replica, ZeroGradThenTwoBackwardPassesAccumulate) {
  Model model = make_model("mlp");
  Replica replica(model);
  const ::torch::Tensor x = ::torch::randn({5, 1, 28, 28});
  const ::torch::Tensor y = ::torch::randint(0, 10, {5}, ::torch::kInt64);
  loss_of(model, x, y).backward();  // dirty the buffer first
  replica.zero_grad();
  for (float g : replica.grad_span()) ASSERT_EQ(g, 0.0f);
  loss_of(model, x, y).backward();
  const std::vector<float> once(replica.grad_span().begin(), replica.grad_span().end());
  loss_of(model, x, y).backward();
  const auto twice = replica.grad_span();
  double norm = 0;
  for (std::size_t i = 0; i < once.size(); ++i) {
    ASSERT_NEAR(twice[i], 2.0f * once[i], 1e-6f + 1e-5f * std::abs(once[i])) << "element " << i;
    norm += once[i] * once[i];
  }
  EXPECT_GT(norm, 0.0);
  for (const auto& p : parameters_of(model)) EXPECT_TRUE(p.grad().defined());
}

TEST(Replica, ViewsCoverTheFlatBuffers) {
  Model model = make_model("mlp");
  Replica replica(model);
  EXPECT_EQ(replica.numel(), 235146u);
  EXPECT_EQ(replica.params().numel(), replica.numel());
  EXPECT_EQ(replica.grads().dtype(), core::DType::f32);
  EXPECT_EQ(replica.params().data(), replica.flat_params().data_ptr());
  EXPECT_EQ(replica.grads().data(), replica.flat_grads().data_ptr());
  EXPECT_EQ(replica.flat_params().numel(), static_cast<std::int64_t>(replica.numel()));
}

TEST(Replica, RejectsNonFloatParametersNamingThem) {
  ::torch::nn::Linear layer(3, 2);
  layer->to(::torch::kFloat64);
  try {
    Replica replica(*layer);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'weight'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos) << e.what();
  }
}

TEST(Replica, RejectsTiedWeights) {
  ::torch::nn::Module tied;
  const ::torch::Tensor w = tied.register_parameter("encoder", ::torch::ones({4}));
  tied.register_parameter("decoder", w);
  try {
    Replica replica(tied);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'encoder' and 'decoder'"), std::string::npos) << e.what();
  }
}

TEST(Replica, RejectsModuleWithoutParameters) {
  ::torch::nn::Sequential empty;
  EXPECT_THROW(Replica replica(*empty), InvalidArgument);
}

}  // namespace
}  // namespace fast::torch
