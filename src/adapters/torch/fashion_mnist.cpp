#include "fast/adapters/torch/fashion_mnist.hpp"

#include <cstdint>
#include <cstring>
#include <future>
#include <vector>

#include "bulk_tensor.hpp"
#include "decode_codes.hpp"
#include "fast/adapters/torch/idx.hpp"
#include "fast/core/env.hpp"
#include "fast/core/error.hpp"
#include "fast/training/environment.hpp"

namespace fast::torch {

namespace {

// dir/name, uncompressed, where it exists (torchvision's raw folder holds both forms; reading it
// skips the inflate, which every process that loads the four files would pay), else dir/name.gz, which
// must exist; else dir/name when something else has that name (the reader says what it is: "got a
// directory").
std::filesystem::path idx_file(const std::filesystem::path& dir, const std::string& name) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir / name, ec)) return dir / name;
  const std::filesystem::path gz = dir / (name + ".gz");
  if (!std::filesystem::exists(gz, ec)) {
    if (std::filesystem::exists(dir / name, ec)) return dir / name;
    FAST_THROW(
        IoError,
        "{}: Fashion-MNIST file missing: expected the gzip IDX file there (or {} uncompressed), got no such "
        "file (install the Debian package dataset-fashion-mnist, or point the environment variable FAST_DATA_DIR "
        "or the setting data_dir (fast train --data-dir) at a folder holding the four files)",
        gz.string(), name);
  }
  return gz;
}

// The feature of each pixel value v, (v/255 - mean)/std, computed by the same torch operations on
// float32 as on a whole tensor, so each value is bit for bit what they give (a table of 256 floats,
// where torch's conversion of the whole uint8 tensor, to(kFloat32) then three in-place passes, was
// about a fifth of the CPU time of a short `fast train` process).
::torch::Tensor pixel_values() {
  return ::torch::arange(256, ::torch::kFloat32).div_(255.0).sub_(kFashionMnistMean).div_(kFashionMnistStd);
}

}  // namespace

std::filesystem::path default_data_dir() { return core::env_string(training::training_environment(), "FAST_DATA_DIR"); }

std::shared_ptr<const Dataset> load_idx_split(const std::filesystem::path& images_file,
                                              const std::filesystem::path& labels_file, SplitForm form) {
  // Labels first: small, so a bad pair is rejected before the large read.
  const std::vector<std::uint8_t> labels = read_idx_labels(labels_file);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= kFashionMnistClasses) {
      FAST_THROW(InvalidArgument, "{}: label out of range at index {}: expected < {}, got {}", labels_file.string(), i,
                 kFashionMnistClasses, labels[i]);
    }
  }
  IdxImages images = read_idx_images(images_file);
  if (images.count != labels.size()) {
    FAST_THROW(InvalidArgument, "{}: image count does not match the labels of {}: expected {}, got {}",
               images_file.string(), labels_file.string(), labels.size(), images.count);
  }
  const auto n = static_cast<std::int64_t>(images.count);
  const std::vector<std::int64_t> sizes{n, 1, std::int64_t{images.rows}, std::int64_t{images.cols}};
  auto data = std::make_shared<Dataset>();
  const ::torch::Tensor table = pixel_values();
  if (form == SplitForm::codes) {
    // The tensor takes the pixels read (no copy; the capacity the read grew beyond them is freed)
    // and frees them with itself.
    images.pixels.shrink_to_fit();
    auto* pixels = new std::vector<std::uint8_t>(std::move(images.pixels));
    data->samples = ::torch::from_blob(
        pixels->data(), sizes, [pixels](void*) { delete pixels; }, ::torch::kUInt8);
    data->code_values = table;
  } else {
    data->samples = bulk_float_tensor(sizes);
    decode_codes(images.pixels, table, data->samples.data_ptr<float>());
  }
  ::torch::Tensor lab = ::torch::empty({n}, ::torch::kUInt8);
  if (!labels.empty()) std::memcpy(lab.data_ptr<std::uint8_t>(), labels.data(), labels.size());
  data->labels = lab.to(::torch::kInt64);
  return data;
}

FashionMnist load_fashion_mnist(const std::filesystem::path& dir) {
  const auto train_images = idx_file(dir, "train-images-idx3-ubyte");
  const auto train_labels = idx_file(dir, "train-labels-idx1-ubyte");
  const auto test_images = idx_file(dir, "t10k-images-idx3-ubyte");
  const auto test_labels = idx_file(dir, "t10k-labels-idx1-ubyte");
  // The two splits are independent: read the test split on a second thread.
  auto test =
      std::async(std::launch::async, [&] { return load_idx_split(test_images, test_labels, SplitForm::features); });
  FashionMnist out;
  out.train = load_idx_split(train_images, train_labels, SplitForm::codes);
  out.test = test.get();
  return out;
}

}  // namespace fast::torch
