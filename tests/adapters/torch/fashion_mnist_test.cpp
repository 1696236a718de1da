#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <tuple>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>

#include "fast/adapters/torch/evaluate.hpp"
#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/idx.hpp"
#include "fast/adapters/torch/models.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

TEST(FashionMnist, RealDatasetHas60000And10000SamplesWithBalancedLabels) {
  const auto dir = default_data_dir();
  if (!std::filesystem::exists(dir / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not installed in " << dir << " (Debian package dataset-fashion-mnist)";
  }
  const FashionMnist data = load_fashion_mnist(dir);
  ASSERT_EQ(data.train->size(), 60000);
  ASSERT_EQ(data.test->size(), 10000);
  EXPECT_EQ(data.train->samples.sizes(), (std::vector<std::int64_t>{60000, 1, 28, 28}));
  EXPECT_EQ(data.test->samples.sizes(), (std::vector<std::int64_t>{10000, 1, 28, 28}));
  EXPECT_TRUE(::torch::equal(::torch::bincount(data.train->labels), ::torch::full({10}, 6000, ::torch::kInt64)));
  EXPECT_TRUE(::torch::equal(::torch::bincount(data.test->labels), ::torch::full({10}, 1000, ::torch::kInt64)));
  // The training split keeps its pixels: one byte each, the table of 256 features, the labels.
  EXPECT_EQ(data.train->samples.scalar_type(), ::torch::kUInt8);
  EXPECT_EQ(data.train->bytes(), 60000u * 784 + 256 * 4 + 60000 * 8);
  EXPECT_EQ(data.test->samples.scalar_type(), ::torch::kFloat32);
  EXPECT_FALSE(data.test->code_values.defined());
  const ::torch::Tensor train = data.train->features(0, data.train->size());
  // The normalisation constants are the training set's mean and standard deviation of x/255.
  EXPECT_NEAR(train.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(train.std().item<double>(), 1.0, 0.01);
  EXPECT_NEAR(train.min().item<double>(), -kFashionMnistMean / kFashionMnistStd, 1e-5);
  // Both splits' features are bit for bit what torch's conversion of the whole uint8 tensor gives
  // (the test split, 31 MB, in a mapping of its own).
  for (const auto& [name, split, features] :
       {std::tuple{"train", data.train, train}, std::tuple{"t10k", data.test, data.test->samples}}) {
    const IdxImages raw_images = read_idx_images(dir / (std::string(name) + "-images-idx3-ubyte.gz"));
    ::torch::Tensor raw = ::torch::empty(split->samples.sizes(), ::torch::kUInt8);
    std::memcpy(raw.data_ptr<std::uint8_t>(), raw_images.pixels.data(), raw_images.pixels.size());
    const ::torch::Tensor expected =
        raw.to(::torch::kFloat32).div_(255.0).sub_(kFashionMnistMean).div_(kFashionMnistStd);
    ASSERT_EQ(features.sizes(), expected.sizes()) << name;
    EXPECT_EQ(std::memcmp(features.data_ptr<float>(), expected.data_ptr<float>(),
                          static_cast<std::size_t>(expected.numel()) * sizeof(float)),
              0)
        << name;
  }
  // The same data from the .gz files alone (the suite's folder also holds them uncompressed, and
  // FAST reads those first: tests/CMakeLists.txt).
  const auto gz_only = std::filesystem::temp_directory_path() / ("fast_fmnist_gz_" + std::to_string(::getpid()));
  std::filesystem::remove_all(gz_only);
  std::filesystem::create_directories(gz_only);
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                        "t10k-labels-idx1-ubyte.gz"})
    std::filesystem::create_symlink(std::filesystem::absolute(dir / f), gz_only / f);
  const FashionMnist from_gz = load_fashion_mnist(gz_only);
  std::filesystem::remove_all(gz_only);
  EXPECT_TRUE(::torch::equal(from_gz.train->samples, data.train->samples));
  EXPECT_TRUE(::torch::equal(from_gz.train->labels, data.train->labels));
  EXPECT_TRUE(::torch::equal(from_gz.test->samples, data.test->samples));
  EXPECT_TRUE(::torch::equal(from_gz.test->labels, data.test->labels));
}

// A folder without the files names the first one missing and how to get it; a folder in a file's
// place is named as what it is.
TEST(FashionMnist, AMissingFileOrAFolderInItsPlaceIsNamed) {
  const auto dir = std::filesystem::temp_directory_path() / ("fast_fmnist_missing_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string e;
  try {
    (void)load_fashion_mnist(dir);
  } catch (const IoError& error) {
    e = error.what();
  }
  EXPECT_NE(e.find("train-images-idx3-ubyte.gz: Fashion-MNIST file missing: expected the gzip IDX file there (or "
                   "train-images-idx3-ubyte uncompressed), got no such file (install the Debian package"),
            std::string::npos)
      << e;
  for (const char* name :
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    std::filesystem::create_directories(dir / name);
  e.clear();
  try {
    (void)load_fashion_mnist(dir);
  } catch (const IoError& error) {
    e = error.what();
  }
  std::filesystem::remove_all(dir);
  EXPECT_NE(e.find("-ubyte: cannot open IDX file: expected an IDX file (gzip or uncompressed), got a directory"),
            std::string::npos)
      << e;
}

// 2N samples whose labels are i % 10; images are zero.
Dataset synthetic(std::int64_t n) {
  Dataset d;
  d.samples = ::torch::zeros({n, 1, 28, 28});
  d.labels = ::torch::arange(n, ::torch::kInt64).remainder(10);
  return d;
}

// Flatten + Linear(784, 10) with zero weights: logits = bias for every sample.
Model bias_model(const std::vector<float>& bias) {
  ::torch::nn::Sequential seq(::torch::nn::Flatten(), ::torch::nn::Linear(784, 10));
  ::torch::NoGradGuard no_grad;
  auto* linear = seq[1]->as<::torch::nn::Linear>();
  linear->weight.zero_();
  linear->bias.copy_(::torch::tensor(bias));
  return Model("bias", seq.ptr(), [seq](const ::torch::Tensor& x) mutable { return seq->forward(x); });
}

TEST(Evaluate, UniformLogitsGiveLogTenLossAndFirstClassAccuracy) {
  auto model = bias_model(std::vector<float>(10, 0.5f));
  const Dataset data = synthetic(95);  // labels 0..9 repeated; label 0 appears 10 times
  const EvalResult r = evaluate(model, data, 7);
  EXPECT_EQ(r.samples, 95);
  EXPECT_NEAR(r.loss, std::log(10.0), 1e-6);
  EXPECT_DOUBLE_EQ(r.accuracy, 10.0 / 95.0);  // ties: arg-max is the first class
}

TEST(Evaluate, ClosedFormLossAndAccuracyForFixedLogits) {
  std::vector<float> bias(10, 0.0f);
  bias[3] = 2.0f;
  auto model = bias_model(bias);
  const Dataset data = synthetic(100);
  const double z = std::exp(2.0) + 9.0;
  // 10 samples have label 3 (loss log z - 2), 90 others (loss log z): the same in one chunk, in
  // chunks that split the labels unevenly, and in the default chunks (kCpuEvalBatch).
  for (const std::int64_t batch : {std::int64_t{1000}, std::int64_t{13}, std::int64_t{0}}) {
    const EvalResult r = evaluate(model, data, batch);
    EXPECT_NEAR(r.loss, (10 * (std::log(z) - 2.0) + 90 * std::log(z)) / 100.0, 1e-6) << "batch " << batch;
    EXPECT_DOUBLE_EQ(r.accuracy, 0.1) << "batch " << batch;
    EXPECT_EQ(r.samples, 100) << "batch " << batch;
  }
}

// The default chunk covers a test set larger than it (kCpuEvalBatch on the CPU): every sample
// counts once, as with one chunk.
TEST(Evaluate, DefaultChunksCoverEverySampleOnce) {
  std::vector<float> bias(10, 0.0f);
  bias[7] = 1.0f;
  auto model = bias_model(bias);
  const std::int64_t n = 3 * kCpuEvalBatch + 5;
  const Dataset data = synthetic(n);
  const EvalResult r = evaluate(model, data);
  // Every sample predicts class 7; labels cycle 0..9, so the samples i < n with i % 10 == 7 are right.
  const std::int64_t right = (n + 2) / 10;
  const double z = std::exp(1.0) + 9.0;
  EXPECT_EQ(r.samples, n);
  EXPECT_DOUBLE_EQ(r.accuracy, static_cast<double>(right) / static_cast<double>(n));
  EXPECT_NEAR(r.loss,
              (static_cast<double>(right) * (std::log(z) - 1.0) + static_cast<double>(n - right) * std::log(z)) /
                  static_cast<double>(n),
              1e-6);
}

TEST(Evaluate, RestoresTrainingModeAndLeavesGradsAlone) {
  auto model = make_model("mlp");
  const Dataset data = synthetic(20);
  model.train(true);
  evaluate(model, data, 8);
  EXPECT_TRUE(model.is_training());
  model.train(false);
  evaluate(model, data, 8);
  EXPECT_FALSE(model.is_training());
  for (const auto& [name, p] : model.named_parameters()) EXPECT_FALSE(p.grad().defined()) << name;
}

TEST(Evaluate, RejectsBadBatchAndEmptyData) {
  auto model = make_model("mlp");
  EXPECT_THROW(evaluate(model, synthetic(10), -1), InvalidArgument);
  EXPECT_THROW(evaluate(model, Dataset{}, 10), InvalidArgument);
}

}  // namespace
}  // namespace fast::torch
