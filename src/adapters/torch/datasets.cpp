// Dataset specs: parsing and checking, the synthetic generator, and the dispatch to the readers.

#include "fast/adapters/torch/datasets.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ranges>

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
DataSplits synthetic(const training::DatasetSpec& spec) {
  const training::SyntheticSpec s = training::synthetic_spec(spec);
  const auto& [shape, features, classes, n_train, n_test, noise, seed] = s;
  const double sigma = noise * std::sqrt(static_cast<double>(features));
  // One standard normal per two draws (the first of a Box-Muller pair).
  auto normal = [](core::SplitMix64& g) {
    const double u1 = core::uniform01_left_open(g());
    return core::box_muller(u1, core::uniform01(g())).first;
  };
  // Streams of `seed` for the centres, the training set and the test set (salts spell their use).
  constexpr std::uint64_t kCentres = 0x63656E7472657300ULL;  // "centres"
  core::SplitMix64 centre_rng(core::derive_seed(seed, kCentres, 0));
  std::vector<float> centres(static_cast<std::size_t>(classes * features));
  for (float& c : centres) c = static_cast<float>(normal(centre_rng));
  auto split = [&](std::int64_t n, std::uint64_t salt) {
    auto data = std::make_shared<Dataset>();
    std::vector<std::int64_t> sizes{n};
    sizes.insert(sizes.end(), shape.begin(), shape.end());
    data->samples = ::torch::empty(sizes, ::torch::kFloat32);
    data->labels = ::torch::empty({n}, ::torch::kInt64);
    data->classes = classes;
    float* x = data->samples.data_ptr<float>();
    std::int64_t* y = data->labels.data_ptr<std::int64_t>();
    core::SplitMix64 rng(core::derive_seed(seed, salt, 0));
    for (std::int64_t i = 0; i < n; ++i) {
      y[i] = i % classes;
      const float* c = centres.data() + y[i] * features;
      for (std::int64_t f = 0; f < features; ++f) *x++ = c[f] + static_cast<float>(sigma * normal(rng));
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

DataSplits load_datasets(const training::DatasetSpec& spec, const std::filesystem::path& data_dir) {
  if (training::reads_data_dir(spec))
    return load_fashion_mnist(
        data_dir.empty() ? std::filesystem::path(core::env_string(training::training_environment(), "FAST_DATA_DIR"))
                         : data_dir);
  if (training::is_generated(spec)) return synthetic(spec);
  return from_files(spec);
}

}  // namespace fast::torch
