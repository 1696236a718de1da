// Dataset specs, the synthetic dataset and the checks on arrays from files (datasets.hpp).

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "fast/adapters/torch/datasets.hpp"
#include "fast/adapters/torch/npy.hpp"
#include "fast/core/error.hpp"
#include "fast/core/random.hpp"

namespace fast::torch {
namespace {

template <typename T>
NpyArray array(NpyType type, std::vector<std::int64_t> shape, const std::vector<T>& values) {
  NpyArray a;
  a.type = type;
  a.shape = std::move(shape);
  a.bytes.resize(values.size() * sizeof(T));
  std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

void expect_invalid(const std::function<void()>& f, const std::string& expected) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected: " << expected;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(SyntheticDataset, HasTheAskedShapeBalancedLabelsAndTheSameBytesForASeed) {
  const training::DatasetSpec spec =
      training::parse_dataset_spec("synthetic:shape=2x3,classes=3,train=300,test=30,noise=0.5,seed=9");
  const DataSplits a = load_datasets(spec, {});
  const DataSplits b = load_datasets(spec, {});
  EXPECT_EQ(a.train->samples.sizes(), (std::vector<std::int64_t>{300, 2, 3}));
  EXPECT_EQ(a.test->samples.sizes(), (std::vector<std::int64_t>{30, 2, 3}));
  EXPECT_EQ(a.train->classes, 3);
  EXPECT_EQ(a.train->sample_shape(), (std::vector<std::int64_t>{2, 3}));
  for (std::int64_t i = 0; i < 300; ++i) ASSERT_EQ(a.train->labels[i].item<std::int64_t>(), i % 3);
  EXPECT_TRUE(::torch::equal(a.train->samples, b.train->samples));
  EXPECT_TRUE(::torch::equal(a.test->samples, b.test->samples));
  const DataSplits c = load_datasets(
      training::parse_dataset_spec("synthetic:shape=2x3,classes=3,train=300,test=30,noise=0.5,seed=10"), {});
  EXPECT_FALSE(::torch::equal(a.train->samples, c.train->samples));
}

// The values of datasets.hpp's description drawn in order by one generator per stream (centres,
// then each sample's features in order, one Box-Muller pair per value), against the dataset made
// by 1, 2 and 7 threads: bit for bit the same.
TEST(SyntheticDataset, AnyNumberOfThreadsMakesTheBytesOfOneGeneratorDrawingInOrder) {
  constexpr std::int64_t features = 5, classes = 3, n_train = 100000, n_test = 40;  // 7 ranges of 2^16 values
  constexpr double noise = 0.5;
  constexpr std::uint64_t seed = 9;
  auto normal = [](core::SplitMix64& g) {
    const double u1 = core::uniform01_left_open(g());
    return core::box_muller(u1, core::uniform01(g())).first;
  };
  core::SplitMix64 centre_rng(core::derive_seed(seed, 0x63656E7472657300ULL, 0));  // "centres"
  std::vector<float> centres(classes * features);
  for (float& c : centres) c = static_cast<float>(normal(centre_rng));
  const double sigma = noise * std::sqrt(static_cast<double>(features));
  auto expected = [&](std::int64_t n, std::uint64_t salt) {
    core::SplitMix64 rng(core::derive_seed(seed, salt, 0));
    std::vector<float> x;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t f = 0; f < features; ++f)
        x.push_back(centres[(i % classes) * features + f] + static_cast<float>(sigma * normal(rng)));
    return x;
  };
  const std::vector<float> train = expected(n_train, 0x747261696E000000ULL /* "train" */);
  const std::vector<float> test = expected(n_test, 0x7465737400000000ULL /* "test" */);
  const training::DatasetSpec spec =
      training::parse_dataset_spec("synthetic:shape=5,classes=3,train=100000,test=40,noise=0.5,seed=9");
  for (const int threads : {1, 2, 7}) {
    const DataSplits d = load_datasets(spec, {}, threads);
    const float* got = d.train->samples.data_ptr<float>();
    ASSERT_EQ(d.train->samples.numel(), n_train * features);
    EXPECT_EQ(std::memcmp(got, train.data(), train.size() * sizeof(float)), 0) << threads << " threads";
    ASSERT_EQ(d.test->samples.numel(), n_test * features);
    EXPECT_EQ(std::memcmp(d.test->samples.data_ptr<float>(), test.data(), test.size() * sizeof(float)), 0)
        << threads << " threads";
  }
}

TEST(SyntheticDataset, SamplesScatterAroundTheirClassCentreWithTheStatedNoise) {
  // noise 0.25 on 64 features: per-feature standard deviation 0.25 * 8 = 2 around the class mean.
  const DataSplits d =
      load_datasets(training::parse_dataset_spec("synthetic:shape=64,classes=2,train=20000,test=2,seed=3"), {});
  const ::torch::Tensor x = d.train->samples;
  const ::torch::Tensor even = x.index({::torch::indexing::Slice(0, ::torch::indexing::None, 2)});
  const ::torch::Tensor centre = even.mean(0);
  const double sd = (even - centre).pow(2).mean().sqrt().item<double>();
  // 10000 x 64 draws: the estimate's relative error is about 1/sqrt(2 x 640000) = 0.09%; 1% leaves room.
  EXPECT_NEAR(sd, 2.0, 0.02);
  // Centres are N(0, 1) per feature: their mean square over 64 features is within 3 x sqrt(2/64) of 1.
  EXPECT_NEAR(centre.pow(2).mean().item<double>(), 1.0, 3 * std::sqrt(2.0 / 64));
}

TEST(TensorDatasets, PixelsAreScaledAndStandardisedWithTheTrainingStatistics) {
  const auto x = array<std::uint8_t>(NpyType::u8, {4, 1}, {0, 255, 0, 255});
  const auto y = array<std::int64_t>(NpyType::i64, {4}, {0, 1, 0, 1});
  const auto tx = array<std::uint8_t>(NpyType::u8, {2, 1}, {51, 255});
  const auto ty = array<std::uint8_t>(NpyType::u8, {2}, {1, 0});
  const DataSplits d = tensor_datasets(x, y, tx, ty, "train", "test");
  // Training pixels 0, 1, 0, 1 (after /255): mean 0.5, standard deviation 0.5.
  EXPECT_FLOAT_EQ(d.train->samples[0][0].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(d.train->samples[1][0].item<float>(), 1.0f);
  EXPECT_NEAR(d.test->samples[0][0].item<float>(), (0.2 - 0.5) / 0.5, 1e-6);
  EXPECT_EQ(d.train->classes, 2);
  EXPECT_EQ(d.test->classes, 2);
  EXPECT_EQ(d.test->labels[0].item<std::int64_t>(), 1);
}

TEST(TensorDatasets, FloatFeaturesAreKeptAsGiven) {
  const auto x = array<double>(NpyType::f64, {2, 2}, {0.5, -2, 3, 4});
  const auto y = array<std::int32_t>(NpyType::i32, {2}, {0, 2});
  const DataSplits d = tensor_datasets(x, y, x, y, "train", "test");
  EXPECT_FLOAT_EQ(d.train->samples[0][1].item<float>(), -2.0f);
  EXPECT_EQ(d.train->classes, 3);
}

// From 8 MiB of float32 the features live in a mapping of their own (bulk_tensor.hpp: 2 MiB-aligned),
// with the same values as the small case: uint8 pixels standardised with the training statistics,
// float32 kept bit for bit.
TEST(TensorDatasets, LargeFeaturesLiveInTheirOwnAlignedMappingWithTheSameValues) {
  constexpr std::int64_t n = 3000, side = 28, per = side * side;  // 2.35M values: 9.4 MB of float32
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(n * per));
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>((i * 7 + i / 13) % 256);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
  const auto x = array<std::uint8_t>(NpyType::u8, {n, 1, side, side}, pixels);
  const auto y = array<std::int64_t>(NpyType::i64, {n}, labels);
  const DataSplits d = tensor_datasets(x, y, x, y, "train", "test");
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d.train->samples.data_ptr<float>()) % kHugePage, 0u);
  ASSERT_TRUE(d.train->samples.is_contiguous());
  ASSERT_EQ(d.train->samples.sizes(), (std::vector<std::int64_t>{n, 1, side, side}));
  double sum = 0, squares = 0;
  for (const std::uint8_t v : pixels) sum += v / 255.0;
  const double mean = sum / static_cast<double>(pixels.size());
  for (const std::uint8_t v : pixels) squares += (v / 255.0 - mean) * (v / 255.0 - mean);
  const double sd = std::sqrt(squares / static_cast<double>(pixels.size()));
  const float* got = d.train->samples.data_ptr<float>();
  const float* test = d.test->samples.data_ptr<float>();
  for (std::size_t i = 0; i < pixels.size(); i += 4099) {
    const double want = (pixels[i] / 255.0 - mean) / sd;
    ASSERT_NEAR(got[i], want, 1e-5) << "index " << i;
    ASSERT_NEAR(test[i], want, 1e-5) << "index " << i;
  }
  std::vector<float> values(pixels.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) * 0.25f - 7.0f;
  const auto fx = array<float>(NpyType::f32, {n, per}, values);
  const DataSplits f = tensor_datasets(fx, y, fx, y, "train", "test");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(f.train->samples.data_ptr<float>()) % kHugePage, 0u);
  EXPECT_EQ(std::memcmp(f.train->samples.data_ptr<float>(), values.data(), values.size() * sizeof(float)), 0);
}

TEST(TensorDatasets, BadArraysAreRefusedNamingTheSourceAndTheFault) {
  const auto x = array<float>(NpyType::f32, {3, 2}, {1, 2, 3, 4, 5, 6});
  const auto y = array<std::int64_t>(NpyType::i64, {3}, {0, 1, 1});
  auto run = [](const NpyArray& a, const NpyArray& b, const NpyArray& c, const NpyArray& d) {
    return [=] { (void)tensor_datasets(a, b, c, d, "train.npz", "test.npz"); };
  };
  expect_invalid(run(x, array<std::int64_t>(NpyType::i64, {2}, {0, 1}), x, y),
                 "train.npz: features x hold 3 samples but labels y hold 2");
  expect_invalid(run(x, array<std::int64_t>(NpyType::i64, {3}, {0, 1, -4}), x, y),
                 "train.npz: label out of range at index 2: expected 0 to 99999 (at most 100000 classes), got -4");
  expect_invalid(run(x, y, x, array<std::int64_t>(NpyType::i64, {3}, {0, 1, 2})),
                 "test.npz: label out of range at index 2: expected 0 to 1, got 2");
  expect_invalid(run(x, array<float>(NpyType::f32, {3}, {0, 1, 1}), x, y),
                 "train.npz: labels y: expected integers, got <f4");
  expect_invalid(run(x, array<std::int64_t>(NpyType::i64, {3, 1}, {0, 1, 1}), x, y),
                 "labels y: expected one dimension [N], got shape (3, 1)");
  expect_invalid(run(array<float>(NpyType::f32, {6}, {1, 2, 3, 4, 5, 6}), y, x, y),
                 "train.npz: features x: expected at least two dimensions");
  expect_invalid(
      run(x, y, array<float>(NpyType::f32, {2, 3}, {1, 2, 3, 4, 5, 6}), array<std::int64_t>(NpyType::i64, {2}, {0, 1})),
      "test.npz: test samples have shape (3), the training samples (train.npz) have (2)");
  expect_invalid(run(array<float>(NpyType::f32, {3, 2}, {1, 2, NAN, 4, 5, 6}), y, x, y),
                 "train.npz: features x: value nan at flat index 2 is not a finite float32");
  expect_invalid(run(x, array<std::int64_t>(NpyType::i64, {3}, {0, 0, 0}), x, y), "expected at least 2 classes");
  // uint8 pixels in one set only, either way round (the training set's kind decides the scaling).
  const auto pixels = array<std::uint8_t>(NpyType::u8, {3, 2}, {1, 2, 3, 4, 5, 6});
  expect_invalid(run(x, y, pixels, y),
                 "test.npz: test features are uint8 pixels but the training features (train.npz) are of type <f4");
  expect_invalid(run(pixels, y, x, y),
                 "test.npz: test features are of type <f4 but the training features (train.npz) are uint8 pixels");
  // A label that would size the model for 2^40 classes, or beyond int64, is refused before anything
  // is allocated for it, naming the file and the value as stored.
  expect_invalid(run(x, array<std::int64_t>(NpyType::i64, {3}, {0, 1, std::int64_t{1} << 40}), x, y),
                 "train.npz: label out of range at index 2: expected 0 to 99999 (at most 100000 classes), got "
                 "1099511627776");
  expect_invalid(run(x, array<std::uint64_t>(NpyType::u64, {3}, {0, 1, ~std::uint64_t{0}}), x, y),
                 "got 18446744073709551615");
  expect_invalid(run(x, array<std::int64_t>(NpyType::i64, {3}, {0, 1, training::kMaxClasses}), x, y), "got 100000");
  const DataSplits most = tensor_datasets(x, array<std::int64_t>(NpyType::i64, {3}, {0, 1, training::kMaxClasses - 1}),
                                          x, y, "train.npz", "test.npz");
  EXPECT_EQ(most.train->classes, training::kMaxClasses);
}

}  // namespace
}  // namespace fast::torch
