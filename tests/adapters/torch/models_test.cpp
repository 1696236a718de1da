#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include "fast/adapters/torch/model_registry.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/adapters/torch/replica.hpp"
#include "fast/core/error.hpp"
#include "fast/core/long_lived.hpp"

// An allocation no allocator can make (LibtorchMessage's and PooledCpuAllocator's tests of a refused
// allocation, in this binary) returns null under the sanitizers as under glibc, so that libtorch
// throws the error those tests read; the sanitizers' own default is to end the process there. One
// definition per binary: here. (The environment's ASAN_OPTIONS/TSAN_OPTIONS still apply on top.)
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace fast::torch {
namespace {

// (in*out + out) per Linear, (in_c*out_c*k*k + out_c) per Conv2d.
constexpr std::int64_t linear(std::int64_t in, std::int64_t out) { return in * out + out; }
constexpr std::int64_t conv(std::int64_t in_c, std::int64_t out_c, std::int64_t k) {
  return in_c * out_c * k * k + out_c;
}
constexpr std::int64_t kMlpParams = linear(784, 256) + linear(256, 128) + linear(128, 10);
constexpr std::int64_t kCnnParams = conv(1, 32, 3) + conv(32, 64, 3) + linear(64 * 5 * 5, 128) + linear(128, 10);

// The line of a libtorch error a user reads: a TorchScript error's exception line, a failed check's
// message without libtorch's source file and condition, never the backtrace.
TEST(LibtorchMessage, KeepsTheMessageWithoutBacktraceOrSourceLocation) {
  EXPECT_EQ(libtorch_message("[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate "
                             "memory: you tried to allocate 64 bytes.\nframe #0: c10::alloc_cpu(unsigned long)"),
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate 64 bytes.");
  EXPECT_EQ(libtorch_message("The following operation failed in the TorchScript interpreter.\nTraceback:\n  File "
                             "\"m.py\", line 3\nRuntimeError: mat1 and mat2 shapes cannot be multiplied\n"),
            "mat1 and mat2 shapes cannot be multiplied");
  EXPECT_EQ(libtorch_message("shape '[2, 3]' is invalid for input of size 5\nException raised from view at x.cpp:1"),
            "shape '[2, 3]' is invalid for input of size 5");
}

// A libtorch error thrown from the actual allocator reads the same way.
TEST(LibtorchMessage, AnAllocationLibtorchCannotMakeIsNamedWithItsSize) {
  std::string what;
  try {
    (void)::torch::empty({std::int64_t{1} << 62}, ::torch::kUInt8);
  } catch (const c10::Error& e) {
    what = libtorch_message(e.what());
  }
  EXPECT_TRUE(
      what.starts_with("DefaultCPUAllocator: can't allocate memory: you tried to allocate 4611686018427387904 "
                       "bytes."))
      << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
}

TEST(ModelZoo, ParameterCountsMatchLayerFormulas) {
  static_assert(kMlpParams == 235146 && kCnnParams == 225034);
  EXPECT_EQ(parameter_count("mlp"), kMlpParams);
  EXPECT_EQ(parameter_count("cnn"), kCnnParams);
  EXPECT_LT(parameter_count("cnn"), 500000);
  std::int64_t counted = 0;
  Model cnn = make_model("cnn");
  for (const auto& [name, p] : cnn.named_parameters()) counted += p.numel();
  EXPECT_EQ(counted, kCnnParams);
}

TEST(ModelZoo, EveryModelMapsImagesToTenLogits) {
  ::torch::NoGradGuard no_grad;
  for (const auto& name : training::model_names()) {
    Model model = make_model(name);
    const ::torch::Tensor out = model.forward(::torch::randn({7, 1, 28, 28}));
    EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{7, 10})) << name;
  }
}

TEST(ModelZoo, UnknownNameIsInvalidArgumentListingAllowedNames) {
  try {
    make_model("resnet50");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'resnet50'"), std::string::npos) << what;
    EXPECT_NE(what.find("mlp, cnn, resnet"), std::string::npos) << what;
    EXPECT_NE(what.find("TorchScript file"), std::string::npos) << what;
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
  for (const auto& name : training::model_names()) {
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
  Model model = make_model("mlp");
  Replica replica(model);
  const auto values = initial_parameters("mlp", 11);
  replica.load(core::ConstView(std::span<const float>(values)));
  EXPECT_TRUE(::torch::equal(model.named_parameters().front().second.detach().flatten(),
                             ::torch::tensor(std::vector<float>(values.begin(), values.begin() + 784 * 256))));
}

// make_model_to_load's network is make_model's: the same parameters (names, shapes, order) and,
// loaded with the same values, the same logits bit for bit, in training and in eval mode; for
// every built-in model (resnet has no undrawn variant: the same as make_model).
TEST(ModelZoo, AModelToLoadIsTheSameNetworkWithTheSameOutputs) {
  for (const std::string name : {"mlp", "cnn", "resnet"}) {
    Model drawn = make_model(name);
    Model to_load = make_model_to_load(name);
    const auto a = drawn.named_parameters();
    const auto b = to_load.named_parameters();
    ASSERT_EQ(a.size(), b.size()) << name;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].first, b[i].first) << name;
      EXPECT_EQ(a[i].second.sizes(), b[i].second.sizes()) << name << " " << a[i].first;
    }
    const auto values = initial_parameters(name, {}, 5);
    Replica(drawn).load(core::ConstView(std::span<const float>(values)));
    Replica(to_load).load(core::ConstView(std::span<const float>(values)));
    const ::torch::Tensor x =
        ::torch::rand({3, 1, 28, 28}, ::torch::Generator(at::make_generator<at::CPUGeneratorImpl>(9)));
    ::torch::NoGradGuard no_grad;
    for (const bool training : {true, false}) {
      drawn.train(training);
      to_load.train(training);
      EXPECT_TRUE(::torch::equal(drawn.forward(x), to_load.forward(x))) << name << (training ? " train" : " eval");
    }
  }
}

// A registration whose make_to_load builds other parameters than its make is refused, naming the
// model and the first difference; the built-ins pass.
TEST(ModelZoo, AModelToLoadWithOtherParametersIsRefused) {
  const auto softmax = [](std::int64_t classes) {
    return [classes](const SampleSpec&) {
      ::torch::nn::Sequential net(::torch::nn::Flatten(), ::torch::nn::Linear(784, classes));
      return Model("to-load-mismatch", net.ptr(), [net](const ::torch::Tensor& x) mutable { return net->forward(x); });
    };
  };
  register_model({.name = "to-load-mismatch", .make = softmax(10), .make_to_load = softmax(11)});
  Model made = make_model("to-load-mismatch");
  try {
    check_model_to_load("to-load-mismatch", {}, made);
    ADD_FAILURE() << "a make_to_load with other shapes was accepted";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("to-load-mismatch"), std::string::npos) << what;
    EXPECT_NE(what.find("[11, 784]"), std::string::npos) << what;
    EXPECT_NE(what.find("[10, 784]"), std::string::npos) << what;
  }
  for (const std::string name : {"mlp", "cnn", "resnet"}) {
    Model model = make_model(name);
    EXPECT_NO_THROW(check_model_to_load(name, {}, model)) << name;
  }
}

// Building the undrawn layers draws nothing from libtorch's generator (their values are left
// unspecified: the caller loads them).
TEST(ModelZoo, AModelToLoadDrawsNothing) {
  ::torch::manual_seed(3);
  const ::torch::Tensor before = ::torch::rand({4});
  ::torch::manual_seed(3);
  Model to_load = make_model_to_load("mlp");
  EXPECT_TRUE(::torch::equal(::torch::rand({4}), before));
}

// Whether each page of [p, p + bytes) is resident (mincore); nullopt where part of it is not mapped.
std::optional<std::vector<bool>> resident_pages(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> flags((bytes + page - 1) / page);
  if (::mincore(const_cast<void*>(p), bytes, flags.data()) != 0) return std::nullopt;
  std::vector<bool> out;
  for (const unsigned char f : flags) out.push_back((f & 1) != 0);
  return out;
}

// The undrawn layers' parameters of 64 KiB or more (mlp's first weight, 784 x 256 floats) lie in
// pages of their own that nothing has touched: page-aligned, none resident until written, unmapped
// with the model. The smaller ones (its biases, its last weight) come from libtorch's allocator.
TEST(ModelZoo, AModelToLoadHoldsItsLargeParametersInUntouchedPagesOfTheirOwn) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const void* weight = nullptr;
  std::size_t bytes = 0;
  {
    Model to_load = make_model_to_load("mlp");
    int large = 0;
    for (const auto& [name, p] : to_load.named_parameters()) {
      if (p.nbytes() < core::kPageRunMinBytes) continue;
      ++large;
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p.data_ptr()) % page, 0U) << name;
      const auto resident = resident_pages(p.data_ptr(), p.nbytes());
      ASSERT_TRUE(resident.has_value()) << name;
      EXPECT_EQ(std::count(resident->begin(), resident->end(), true), 0) << name;
    }
    EXPECT_EQ(large, 2);  // 784 x 256 and 256 x 128 floats
    const ::torch::Tensor first = to_load.named_parameters().front().second;
    ASSERT_EQ(first.sizes(), (std::vector<std::int64_t>{256, 784}));
    first.data_ptr<float>()[0] = 1.0F;  // a write makes its page resident, and that page only
    const auto after = resident_pages(first.data_ptr(), first.nbytes());
    ASSERT_TRUE(after.has_value());
    EXPECT_TRUE(after->front());
    EXPECT_EQ(std::count(after->begin(), after->end(), true), 1);
    weight = first.data_ptr();
    bytes = first.nbytes();
  }
  EXPECT_FALSE(resident_pages(weight, bytes).has_value());  // unmapped with the model
}

// resnet (resnet.hpp), counted by hand: convolutions without bias (in*out*k*k), GroupNorm 2*channels,
// a shortcut (1x1 convolution + GroupNorm) where the block changes stride or width.
constexpr std::int64_t conv_nb(std::int64_t in, std::int64_t out, std::int64_t k) { return in * out * k * k; }
constexpr std::int64_t gn(std::int64_t c) { return 2 * c; }
constexpr std::int64_t block(std::int64_t in, std::int64_t out, bool shortcut) {
  return conv_nb(in, out, 3) + gn(out) + conv_nb(out, out, 3) + gn(out) +
         (shortcut ? conv_nb(in, out, 1) + gn(out) : 0);
}
constexpr std::int64_t resnet_params(std::int64_t channels, std::int64_t classes) {
  return conv_nb(channels, 32, 3) + gn(32) + 2 * block(32, 32, false) + block(32, 64, true) + block(64, 64, false) +
         block(64, 128, true) + block(128, 128, false) + block(128, 256, true) + linear(256, classes);
}

TEST(ModelZoo, ResnetHasTheParametersOfItsLayersAndBetweenOneAndFiveMillion) {
  static_assert(resnet_params(1, 10) == 1616362);
  EXPECT_EQ(parameter_count("resnet"), resnet_params(1, 10));
  EXPECT_EQ(parameter_count("resnet", {{3, 32, 32}, 100}), resnet_params(3, 100));
  EXPECT_GE(parameter_count("resnet"), 1'000'000);
  EXPECT_LE(parameter_count("resnet"), 5'000'000);
}

TEST(ModelZoo, ResnetFlopsFollowTheFeatureMapSizes) {
  // 28x28: stem and stage 1 at 28x28, stage 2 at 14x14, stage 3 at 7x7, stage 4 at 4x4
  // (3x3 convolutions with padding 1 and stride 2: floor((n - 1) / 2) + 1).
  const double stem = 28 * 28 * conv_nb(1, 32, 3);
  const double stage1 = 4.0 * 28 * 28 * conv_nb(32, 32, 3);
  const double stage2 = 14 * 14 * (conv_nb(32, 64, 3) + conv_nb(32, 64, 1) + 3.0 * conv_nb(64, 64, 3));
  const double stage3 = 7 * 7 * (conv_nb(64, 128, 3) + conv_nb(64, 128, 1) + 3.0 * conv_nb(128, 128, 3));
  const double stage4 = 4 * 4 * (conv_nb(128, 256, 3) + conv_nb(128, 256, 1) + conv_nb(256, 256, 3));
  EXPECT_DOUBLE_EQ(model_flops_per_sample("resnet"), 6.0 * (stem + stage1 + stage2 + stage3 + stage4 + 256 * 10));
}

TEST(ModelZoo, ResnetGroupNormsStartAsIdentityAndConvolutionsUniform) {
  Model model = make_model("resnet");
  const auto values = initial_parameters("resnet", 5);
  std::size_t offset = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    const auto n = static_cast<std::size_t>(p.numel());
    const bool norm = name.find("norm") != std::string::npos;
    const double fan_in = p.dim() >= 2 ? static_cast<double>(p.numel() / p.size(0)) : 256.0;  // head bias: 256
    for (std::size_t i = 0; i < n; ++i) {
      const float v = values[offset + i];
      if (norm)
        ASSERT_EQ(v, name.ends_with("weight") ? 1.0f : 0.0f) << name;
      else
        ASSERT_LE(std::abs(v), 1.0 / std::sqrt(fan_in)) << name;
    }
    offset += n;
  }
  EXPECT_EQ(offset, values.size());
}

TEST(ModelZoo, BuiltInModelsAdaptToTheSampleShapeAndClasses) {
  ::torch::NoGradGuard no_grad;
  const SampleSpec colour{{3, 32, 32}, 100};
  for (const auto& name : training::model_names()) {
    Model model = make_model(name, colour);
    EXPECT_EQ(model.forward(::torch::randn({5, 3, 32, 32})).sizes(), (std::vector<std::int64_t>{5, 100})) << name;
  }
  // cnn on 32x32: 30 -> 15 -> 13 -> 6, so fc1 has 64*6*6 inputs.
  EXPECT_EQ(parameter_count("cnn", colour),
            conv(3, 32, 3) + conv(32, 64, 3) + linear(64 * 6 * 6, 128) + linear(128, 100));
  // mlp on 20 features in 3 classes.
  EXPECT_EQ(parameter_count("mlp", {{20}, 3}), linear(20, 256) + linear(256, 128) + linear(128, 3));
  Model mlp = make_model("mlp", {{20}, 3});
  EXPECT_EQ(mlp.forward(::torch::randn({4, 20})).sizes(), (std::vector<std::int64_t>{4, 3}));
}

TEST(ModelZoo, ShapesABuiltInModelCannotTakeAreRefused) {
  EXPECT_THROW((void)make_model("cnn", {{1, 8, 8}, 10}), InvalidArgument);  // too small for two poolings
  EXPECT_THROW((void)make_model("cnn", {{784}, 10}), InvalidArgument);      // not an image
  EXPECT_THROW((void)make_model("resnet", {{20}, 3}), InvalidArgument);
  EXPECT_THROW((void)make_model("mlp", {{20}, 1}), InvalidArgument);  // one class
}

}  // namespace
}  // namespace fast::torch
