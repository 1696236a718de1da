#pragma once
// Where a run's data comes from: `fast train --dataset SPEC` (TrainOptions::dataset, docs/data.md).
//
//   fashion-mnist                                  the gzip IDX files of data_dir (the default)
//   npz:train=FILE,test=FILE                       two .npz archives, each with arrays x and y
//   npy:train_x=F,train_y=F,test_x=F,test_y=F      four .npy files
//   synthetic[:shape=1x28x28,classes=10,train=60000,test=10000,noise=0.25,seed=1]
//
// Arrays from files: x is [N, sample shape...] (at least 2 dimensions), y is [N] integer labels.
// x of type uint8 is taken as 8-bit pixels: x/255, then standardised with the training set's mean
// and standard deviation (one pair for all features, as Fashion-MNIST's constants are); other
// types are converted to float32 as they are (normalise them yourself) and must be finite. The
// class count is the largest training label + 1 (at least 2, at most kMaxClasses: a label the
// model could not be sized for is refused before anything is allocated for it); every label,
// training or test, must lie in [0, classes). Train and test must have the same sample shape and at least one sample.
//
// synthetic: `classes` centroids with independent N(0, 1) features, and samples
// x = centroid[y] + noise * sqrt(features) * N(0, 1) per feature, labels y = i mod classes; the
// test set shares the centroids and draws its own noise. All draws come from SplitMix64 streams
// of `seed` (the same bytes on every platform). With noise 0.25 two centroids lie about
// 2.8 noise standard deviations from their midpoint, so the classes are learnable but overlap a
// little (a benchmark dataset, not a study of generalisation).
//
// Errors: InvalidArgument naming the spec key or the file (and the array), what was expected and
// what was found; IoError for files that cannot be read. parse_dataset_spec() (dataset_spec.hpp)
// checks everything that can be checked without reading: call it before anything else is read.
// Thread-safety: no shared state.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fast/adapters/torch/dataset.hpp"
#include "fast/training/dataset_spec.hpp"

namespace fast::torch {

struct NpyArray;  // npy.hpp

// Reads or generates the two splits. data_dir is used by fashion-mnist only (empty: FAST_DATA_DIR).
// `threads` (>= 1): how many threads generate a synthetic dataset; its bytes do not depend on it.
DataSplits load_datasets(const training::DatasetSpec& spec, const std::filesystem::path& data_dir, int threads = 1);

// The training and test sets of arrays x and y (npz and npy specs), validated as described above.
// `where_train` and `where_test` name the sources in messages.
DataSplits tensor_datasets(const NpyArray& train_x, const NpyArray& train_y, const NpyArray& test_x,
                           const NpyArray& test_y, const std::string& where_train, const std::string& where_test);

}  // namespace fast::torch
