#pragma once
// Dataset specs (`fast train --dataset SPEC`, docs/data.md), read and checked without libtorch:
// the settings table and `fast config-doc` use them too. datasets.hpp reads and generates the data.
//
//   fashion-mnist                                  the gzip IDX files of data_dir (the default)
//   npz:train=FILE,test=FILE                       two .npz archives, each with arrays x and y
//   npy:train_x=F,train_y=F,test_x=F,test_y=F      four .npy files
//   synthetic[:shape=1x28x28,classes=10,train=60000,test=10000,noise=0.25,seed=1]
//
// The keys are declared once (dataset_family(), core/spec.hpp: keyed syntax).
// Errors: InvalidArgument as core/spec.hpp says ("dataset spec '...': key 'classes' expects an
// integer in [2, 100000], got '1'"); IoError for a file key that names no file.
// Thread-safety: no shared state.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fast::core {
class SpecFamily;  // fast/core/spec.hpp
}  // namespace fast::core

namespace fast::training {

// The most classes a dataset may have (a label is at most kMaxClasses - 1), files and synthetic alike.
inline constexpr std::int64_t kMaxClasses = 100'000;

struct DatasetSpec {
  std::string kind;                         // fashion-mnist | npz | npy | synthetic
  std::map<std::string, std::string> args;  // every declared key: the value given, else its default
  std::string text;                         // the spec as given, for messages
};

// The declarations of the kinds and their keys, in documentation order.
const core::SpecFamily& dataset_family();

// The kinds, in a fixed order: {"fashion-mnist", "npz", "npy", "synthetic"}.
std::vector<std::string> dataset_kinds();

// Parses and checks a spec: known kind, known keys, every required key present, numbers in range,
// files named for npz and npy exist. InvalidArgument naming the key otherwise.
DatasetSpec parse_dataset_spec(const std::string& text);

// Whether the spec's data are the files of data_dir (fashion-mnist; FAST_DATA_DIR when data_dir is
// empty), so that the data_dir setting applies to it.
bool reads_data_dir(const DatasetSpec& spec);

// Whether the spec's data are generated (synthetic) rather than read: synthetic_spec() then gives
// their sizes before they are made.
bool is_generated(const DatasetSpec& spec);

// A synthetic spec's values, each checked (the declarations' ranges, and at most 2e9 values in all).
struct SyntheticSpec {
  std::vector<std::int64_t> shape;
  std::int64_t features = 1;  // prod(shape)
  std::int64_t classes = 0, n_train = 0, n_test = 0;
  double noise = 0;
  std::uint64_t seed = 0;
};
SyntheticSpec synthetic_spec(const DatasetSpec& spec);

}  // namespace fast::training
