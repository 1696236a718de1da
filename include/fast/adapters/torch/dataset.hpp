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
struct Dataset {
  ::torch::Tensor images;  // [N, sample shape...] float32 features (images or any other features)
  ::torch::Tensor labels;  // [N] int64, each in [0, classes)
  std::int64_t classes = 10;
  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
  // The shape of one sample (images' sizes without the first).
  std::vector<std::int64_t> sample_shape() const;
};

struct DataSplits {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> test;  // same sample shape and classes as train
};

}  // namespace fast::torch
