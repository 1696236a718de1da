// Dataset specs: parsing and checking, the synthetic generator, and the dispatch to the readers.

#include "fast/adapters/torch/datasets.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ranges>
#include <thread>
#include <vector>

#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/npy.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/random.hpp"
#include "fast/training/environment.hpp"

#include <torch/types.h>

namespace fast::torch {

namespace {

// The synthetic splits described in datasets.hpp.
DataSplits synthetic(const training::DatasetSpec& spec, int threads) {
  const training::SyntheticSpec s = training::synthetic_spec(spec);
  const auto& [shape, features, classes, n_train, n_test, noise, seed] = s;
  const double sigma = noise * std::sqrt(static_cast<double>(features));
  // One standard normal per two draws (the first of a Box-Muller pair): draws k and k + 1 of g.
  auto normal_at = [](std::uint64_t g, std::uint64_t k) {
    const double u1 = core::uniform01_left_open(core::splitmix64_at(g, k));
    return core::box_muller(u1, core::uniform01(core::splitmix64_at(g, k + 1))).first;
  };
  // Streams of `seed` for the centres, the training set and the test set (salts spell their use):
  // SplitMix64 streams, read by position (splitmix64_at: the k-th draw, k >= 1), so that samples
  // are generated on several threads with the values of one thread drawing them in order.
  constexpr std::uint64_t kCentres = 0x63656E7472657300ULL;  // "centres"
  const std::uint64_t centre_stream = core::derive_seed(seed, kCentres, 0);
  std::vector<float> centres(static_cast<std::size_t>(classes * features));
  for (std::size_t j = 0; j < centres.size(); ++j) centres[j] = static_cast<float>(normal_at(centre_stream, 2 * j + 1));
  auto split = [&](std::int64_t n, std::uint64_t salt) {
    auto data = std::make_shared<Dataset>();
    std::vector<std::int64_t> sizes{n};
    sizes.insert(sizes.end(), shape.begin(), shape.end());
    data->samples = ::torch::empty(sizes, ::torch::kFloat32);
    data->labels = ::torch::empty({n}, ::torch::kInt64);
    data->classes = classes;
    float* x = data->samples.data_ptr<float>();
    std::int64_t* y = data->labels.data_ptr<std::int64_t>();
    const std::uint64_t stream = core::derive_seed(seed, salt, 0);
    auto fill = [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        y[i] = i % classes;
        const float* c = centres.data() + y[i] * features;
        float* row = x + i * features;
        const auto first = static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(features);
        for (std::int64_t f = 0; f < features; ++f)
          row[f] =
              c[f] + static_cast<float>(sigma * normal_at(stream, 2 * (first + static_cast<std::uint64_t>(f)) + 1));
      }
    };
    // `threads` ranges of samples, each of at least 2^16 values.
    const std::int64_t most = std::max<std::int64_t>(1, n * features >> 16);
    const std::int64_t parts = std::clamp<std::int64_t>(threads, 1, std::min<std::int64_t>(most, n));
    {
      std::vector<std::jthread> helpers;
      for (std::int64_t t = 1; t < parts; ++t) helpers.emplace_back(fill, n * t / parts, n * (t + 1) / parts);
      fill(0, n / parts);
    }
    return std::shared_ptr<const Dataset>(std::move(data));
  };
  return {.train = split(n_train, 0x747261696E000000ULL /* "train" */),
          .test = split(n_test, 0x7465737400000000ULL /* "test" */)};
}

DataSplits from_files(const training::DatasetSpec& spec) {
  if (spec.kind == "npy") {
    const auto& a = spec.args;
    return tensor_datasets(read_npy(a.at("train_x")), read_npy(a.at("train_y")), read_npy(a.at("test_x")),
                           read_npy(a.at("test_y")), a.at("train_x") + " and " + a.at("train_y"),
                           a.at("test_x") + " and " + a.at("test_y"));
  }
  auto load = [&](const std::string& key) {
    const std::string& file = spec.args.at(key);
    std::map<std::string, NpyArray> arrays = read_npz(file);
    for (const char* name : {"x", "y"}) {
      FAST_ENFORCE(arrays.count(name) == 1, "{}: expected arrays named x (features) and y (labels), got {}", file,
                   arrays.empty() ? std::string("none") : fmt::format("{}", fmt::join(std::views::keys(arrays), ", ")));
    }
    return arrays;
  };
  auto train = load("train");
  auto test = load("test");
  return tensor_datasets(train["x"], train["y"], test["x"], test["y"], spec.args.at("train"), spec.args.at("test"));
}

}  // namespace

DataSplits load_datasets(const training::DatasetSpec& spec, const std::filesystem::path& data_dir, int threads) {
  if (training::reads_data_dir(spec))
    return load_fashion_mnist(
        data_dir.empty() ? std::filesystem::path(core::env_string(training::training_environment(), "FAST_DATA_DIR"))
                         : data_dir);
  if (training::is_generated(spec)) return synthetic(spec, threads);
  return from_files(spec);
}

}  // namespace fast::torch
