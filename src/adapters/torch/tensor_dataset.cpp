// Arrays (npy.hpp) to Datasets: the checks and conversions datasets.hpp describes.

#include <cmath>
#include <cstring>

#include "bulk_tensor.hpp"
#include "fast/adapters/torch/datasets.hpp"
#include "fast/adapters/torch/npy.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {

namespace {

// Label i as stored in the file (a uint64 above 2^63 - 1 too, which y.integer() saturates).
std::string stored_label(const NpyArray& y, std::size_t i) {
  if (y.type != NpyType::u64) return std::to_string(y.integer(i));
  std::uint64_t v = 0;
  std::memcpy(&v, y.bytes.data() + 8 * i, 8);
  return std::to_string(v);
}

// Labels as int64, each >= 0 and < max_classes; InvalidArgument naming the first bad one (its index
// and its value as stored).
::torch::Tensor labels_of(const NpyArray& y, std::int64_t n, std::int64_t max_classes, const std::string& where) {
  FAST_ENFORCE(is_integer(y.type), "{}: labels y: expected integers, got {}", where, descr_of(y.type));
  FAST_ENFORCE(y.shape.size() == 1, "{}: labels y: expected one dimension [N], got shape ({})", where,
               fmt::join(y.shape, ", "));
  FAST_ENFORCE(y.shape[0] == n, "{}: features x hold {} samples but labels y hold {}; expected the same count", where,
               n, y.shape[0]);
  ::torch::Tensor out = ::torch::empty({n}, ::torch::kInt64);
  std::int64_t* p = out.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    p[i] = y.integer(static_cast<std::size_t>(i));
    if (p[i] < 0 || p[i] >= max_classes)
      FAST_THROW(InvalidArgument, "{}: label out of range at index {}: expected 0 to {}{}, got {}", where, i,
                 max_classes - 1, max_classes == training::kMaxClasses ? " (at most 100000 classes)" : "",
                 stored_label(y, static_cast<std::size_t>(i)));
  }
  return out;
}

// Features as float32 [N, ...]: uint8 scaled by 1/255 (standardised later, with the training
// set's statistics), other types converted and checked finite. The tensor is bulk_float_tensor's.
::torch::Tensor features_of(const NpyArray& x, const std::string& where) {
  FAST_ENFORCE(x.shape.size() >= 2 && x.shape[0] >= 1,
               "{}: features x: expected at least two dimensions [N, features...] with N >= 1, got shape ({})", where,
               fmt::join(x.shape, ", "));
  ::torch::Tensor out = bulk_float_tensor(x.shape);
  float* p = out.data_ptr<float>();
  const auto n = static_cast<std::size_t>(x.count());
  if (x.type == NpyType::u8) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<float>(x.bytes[i]) / 255.0f;
    return out;
  }
  if (x.type == NpyType::f32)
    std::memcpy(p, x.bytes.data(), n * sizeof(float));
  else
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<float>(x.number(i));
  for (std::size_t i = 0; i < n; ++i) {
    FAST_ENFORCE(std::isfinite(p[i]), "{}: features x: value {} at flat index {} is not a finite float32", where,
                 x.number(i), i);
  }
  return out;
}

}  // namespace

DataSplits tensor_datasets(const NpyArray& train_x, const NpyArray& train_y, const NpyArray& test_x,
                           const NpyArray& test_y, const std::string& where_train, const std::string& where_test) {
  auto train = std::make_shared<Dataset>();
  auto test = std::make_shared<Dataset>();
  train->samples = features_of(train_x, where_train);
  train->labels = labels_of(train_y, train_x.shape[0], training::kMaxClasses, where_train);
  train->classes = train->labels.max().item<std::int64_t>() + 1;
  FAST_ENFORCE(train->classes >= 2, "{}: labels y: expected at least 2 classes (labels 0 and 1), got only label 0",
               where_train);
  test->samples = features_of(test_x, where_test);
  // The training features' kind decides whether both sets are standardised (below): uint8 pixels in
  // one set and not in the other would leave the two on different scales.
  const auto kind = [](const NpyArray& x) {
    return x.type == NpyType::u8 ? std::string("uint8 pixels") : "of type " + descr_of(x.type);
  };
  FAST_ENFORCE((train_x.type == NpyType::u8) == (test_x.type == NpyType::u8),
               "{}: test features are {} but the training features ({}) are {}; expected the same kind (uint8 pixels "
               "in both, or in neither)",
               where_test, kind(test_x), where_train, kind(train_x));
  FAST_ENFORCE(train->sample_shape() == test->sample_shape(),
               "{}: test samples have shape ({}), the training samples ({}) have ({}); expected the same", where_test,
               fmt::join(test->sample_shape(), ", "), where_train, fmt::join(train->sample_shape(), ", "));
  test->labels = labels_of(test_y, test_x.shape[0], train->classes, where_test);
  test->classes = train->classes;
  if (train_x.type == NpyType::u8) {
    // Standardise both with the training set's statistics (double accumulation).
    const double mean = train->samples.mean(::torch::kFloat64).item<double>();
    const double sd = train->samples.to(::torch::kFloat64).std(/*unbiased=*/false).item<double>();
    const double scale = sd > 0 ? 1.0 / sd : 1.0;
    train->samples.sub_(mean).mul_(scale);
    test->samples.sub_(mean).mul_(scale);
  }
  return {.train = std::move(train), .test = std::move(test)};
}

}  // namespace fast::torch
