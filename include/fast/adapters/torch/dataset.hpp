#pragma once
// Dataset: a labelled sample set in memory, and DataSplits, a training and a test set. One
// read-only copy per process, shared by all its workers. Where they come from: datasets.hpp.

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/types.h>

namespace fast::torch {

// Immutable once built; share it through shared_ptr<const Dataset>. Readers may use it from any
// number of threads (tensors are only read).
//
// The samples are stored in one of two forms, and readers take features through `features` and
// `features_of`, which give float32 either way:
// - float32 features in `samples`, `code_values` undefined;
// - uint8 codes in `samples` and a float32 table of 256 entries in `code_values`: a sample's feature
//   is code_values[code], bit for bit. A quarter of the memory (Fashion-MNIST's training split:
//   47 MB where its features take 188 MB in every process), decoded per batch.
struct Dataset {
  ::torch::Tensor samples;      // [N, sample shape...], contiguous: float32 features or uint8 codes
  ::torch::Tensor code_values;  // [256] float32 where `samples` holds codes; undefined otherwise
  ::torch::Tensor labels;       // [N] int64, each in [0, classes)
  std::int64_t classes = 10;
  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
  // The shape of one sample (samples' sizes without the first).
  std::vector<std::int64_t> sample_shape() const;
  // The float32 features of samples [start, start + count): a view of `samples` when they are
  // features, a new tensor when they are codes. Throws InvalidArgument outside [0, size()].
  ::torch::Tensor features(std::int64_t start, std::int64_t count) const;
  // The float32 features of the samples listed in `rows` (int64, each in [0, size())), in that
  // order: a new tensor.
  ::torch::Tensor features_of(const ::torch::Tensor& rows) const;
  // Samples [start, start + count) as a Dataset sharing this one's memory (same form).
  Dataset slice(std::int64_t start, std::int64_t count) const;
  // The bytes the samples, the table and the labels take.
  std::uint64_t bytes() const;
};

struct DataSplits {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> test;  // same sample shape and classes as train
};

}  // namespace fast::torch
