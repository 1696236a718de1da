#pragma once
// Fashion-MNIST in memory: one read-only copy per process, shared by all its workers.
// Files, normalisation and errors are described in docs/data.md.

#include <cstdint>
#include <filesystem>
#include <memory>

#include "fast/adapters/torch/dataset.hpp"

namespace fast::torch {

inline constexpr int kFashionMnistClasses = 10;
inline constexpr double kFashionMnistMean = 0.2860;  // of x/255 over the training images
inline constexpr double kFashionMnistStd = 0.3530;

// Fashion-MNIST: train 60000 and test 10000 samples of [1,28,28] float32 features,
// (x/255 - 0.2860)/0.3530, 10 classes. The training split keeps its pixels (uint8 codes and the
// table of their features: dataset.hpp) and is decoded per batch; the test split, read whole at
// every evaluation, keeps the features.
using FashionMnist = DataSplits;

// How load_idx_split stores the samples (dataset.hpp): the pixels as uint8 codes with the table of
// their features, or the float32 features.
enum class SplitForm { codes, features };

// The folder FAST reads by default: $FAST_DATA_DIR, else /usr/share/datasets/fashion-mnist
// (where the Debian package dataset-fashion-mnist installs the files).
std::filesystem::path default_data_dir();

// Reads one split from an images file and a labels file (gzip IDX, see idx.hpp), stored as `form`
// says. Besides the IDX errors: the two counts must agree and every label must be < 10
// (InvalidArgument naming the file).
std::shared_ptr<const Dataset> load_idx_split(const std::filesystem::path& images_file,
                                              const std::filesystem::path& labels_file,
                                              SplitForm form = SplitForm::features);

// Reads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte from dir: each file uncompressed where it is there, else its .gz (the
// Debian package's form). A missing file is an IoError naming the .gz and how to get it.
FashionMnist load_fashion_mnist(const std::filesystem::path& dir);

}  // namespace fast::torch
