// Dataset specs: parsing and checking, the synthetic generator, and the dispatch to the readers.

#include "fast/adapters/torch/datasets.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <ranges>

#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/npy.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/core/parse.hpp"
#include "fast/core/random.hpp"

#include <torch/types.h>

namespace fast::torch {

namespace {

// Keys of each kind: required ones first, then optional ones with their defaults.
struct KindKeys {
  std::vector<std::string> required;
  std::map<std::string, std::string> optional;
};

const std::map<std::string, KindKeys>& kinds() {
  static const std::map<std::string, KindKeys> table{{"fashion-mnist", {}},
                                                     {"npz", {{"train", "test"}, {}}},
                                                     {"npy", {{"train_x", "train_y", "test_x", "test_y"}, {}}},
                                                     {"synthetic",
                                                      {{},
                                                       {{"shape", "1x28x28"},
                                                        {"classes", "10"},
                                                        {"train", "60000"},
                                                        {"test", "10000"},
                                                        {"noise", "0.25"},
                                                        {"seed", "1"}}}}};
  return table;
}

std::int64_t integer_arg(const DatasetSpec& spec, const std::string& key, std::int64_t lo, std::int64_t hi) {
  return core::parse_int<std::int64_t>(spec.args.at(key), fmt::format("dataset '{}': {}", spec.text, key), lo, hi);
}

double number_arg(const DatasetSpec& spec, const std::string& key) {
  const std::string& v = spec.args.at(key);
  double out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  FAST_ENFORCE(ec == std::errc() && end == v.data() + v.size() && std::isfinite(out) && out >= 0 && out <= 1e6,
               "dataset '{}': {}: expected a number in [0, 1e6], got '{}'", spec.text, key, v);
  return out;
}

std::vector<std::int64_t> shape_arg(const DatasetSpec& spec) {
  const std::string& v = spec.args.at("shape");
  std::vector<std::int64_t> shape;
  std::size_t start = 0;
  std::int64_t features = 1;
  while (start <= v.size()) {
    const std::size_t x = std::min(v.find('x', start), v.size());
    std::int64_t d = 0;
    const auto [end, ec] = std::from_chars(v.data() + start, v.data() + x, d);
    FAST_ENFORCE(ec == std::errc() && end == v.data() + x && d >= 1 && d <= 1'000'000,
                 "dataset '{}': shape: expected dimensions of 1 to 1000000 joined by 'x' (1x28x28), got '{}'",
                 spec.text, v);
    shape.push_back(d);
    features *= d;
    FAST_ENFORCE(features <= 100'000'000, "dataset '{}': shape {}: expected at most 1e8 features per sample", spec.text,
                 v);
    start = x + 1;
  }
  FAST_ENFORCE(shape.size() <= 4, "dataset '{}': shape {}: expected 1 to 4 dimensions", spec.text, v);
  return shape;
}

// A synthetic spec's values, each checked (InvalidArgument naming the key).
struct SyntheticSpec {
  std::vector<std::int64_t> shape;
  std::int64_t features = 1;  // prod(shape)
  std::int64_t classes = 0, n_train = 0, n_test = 0;
  double noise = 0;
  std::uint64_t seed = 0;
};

SyntheticSpec synthetic_spec(const DatasetSpec& spec) {
  SyntheticSpec s;
  s.shape = shape_arg(spec);
  for (const std::int64_t d : s.shape) s.features *= d;
  s.classes = integer_arg(spec, "classes", 2, kMaxClasses);
  s.n_train = integer_arg(spec, "train", 1, 100'000'000);
  s.n_test = integer_arg(spec, "test", 1, 100'000'000);
  s.noise = number_arg(spec, "noise");
  s.seed = static_cast<std::uint64_t>(integer_arg(spec, "seed", 0, std::numeric_limits<std::int64_t>::max()));
  FAST_ENFORCE((s.n_train + s.n_test + s.classes) * s.features <= 2'000'000'000,
               "dataset '{}': {} samples of {} features: expected at most 2e9 values in all (8 GB)", spec.text,
               s.n_train + s.n_test, s.features);
  return s;
}

// The synthetic splits described in datasets.hpp.
DataSplits synthetic(const DatasetSpec& spec) {
  const SyntheticSpec s = synthetic_spec(spec);
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
    data->images = ::torch::empty(sizes, ::torch::kFloat32);
    data->labels = ::torch::empty({n}, ::torch::kInt64);
    data->classes = classes;
    float* x = data->images.data_ptr<float>();
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

DataSplits from_files(const DatasetSpec& spec) {
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

std::vector<std::string> dataset_kinds() { return {"fashion-mnist", "npz", "npy", "synthetic"}; }

DatasetSpec parse_dataset_spec(const std::string& text) {
  DatasetSpec spec;
  spec.text = text;
  const std::size_t colon = text.find(':');
  spec.kind = text.substr(0, colon);
  const auto kind = kinds().find(spec.kind);
  FAST_ENFORCE(kind != kinds().end(), "dataset '{}': unknown kind '{}'; expected one of {} (docs/data.md)", text,
               spec.kind, fmt::join(dataset_kinds(), ", "));
  const KindKeys& keys = kind->second;
  std::size_t at = colon == std::string::npos ? text.size() : colon + 1;
  while (at < text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t eq = item.find('=');
    FAST_ENFORCE(eq != std::string::npos && eq > 0, "dataset '{}': expected key=value items, got '{}'", text, item);
    const std::string key = item.substr(0, eq);
    const bool known = std::find(keys.required.begin(), keys.required.end(), key) != keys.required.end() ||
                       keys.optional.count(key) == 1;
    FAST_ENFORCE(known, "dataset '{}': unknown key '{}' for {}; docs/data.md lists the keys", text, key, spec.kind);
    FAST_ENFORCE(spec.args.count(key) == 0, "dataset '{}': key '{}' given twice", text, key);
    spec.args[key] = item.substr(eq + 1);
    at = comma + 1;
  }
  for (const std::string& key : keys.required) {
    FAST_ENFORCE(spec.args.count(key) == 1, "dataset '{}': missing {}=FILE; {} needs {}", text, key, spec.kind,
                 fmt::join(keys.required, ", "));
  }
  for (const std::string& key : keys.required) {
    std::error_code ec;
    FAST_ENFORCE_AS(IoError, std::filesystem::is_regular_file(spec.args[key], ec),
                    "dataset '{}': {}: '{}' is not a file", text, key, spec.args[key]);
  }
  for (const auto& [key, value] : keys.optional) spec.args.try_emplace(key, value);
  if (spec.kind == "synthetic") (void)synthetic_spec(spec);  // the numbers, before anything is read
  return spec;
}

DataSplits load_datasets(const DatasetSpec& spec, const std::filesystem::path& data_dir) {
  if (spec.kind == "fashion-mnist")
    return load_fashion_mnist(data_dir.empty() ? std::filesystem::path(core::env_string("FAST_DATA_DIR")) : data_dir);
  if (spec.kind == "synthetic") return synthetic(spec);
  return from_files(spec);
}

}  // namespace fast::torch
