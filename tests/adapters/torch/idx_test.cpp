#include <gtest/gtest.h>

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "fast/adapters/torch/fashion_mnist.hpp"
#include "fast/adapters/torch/idx.hpp"
#include "fast/adapters/torch/trainer.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

void put_u32(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}

Bytes idx(std::uint32_t magic, const std::vector<std::uint32_t>& sizes, const Bytes& payload) {
  Bytes out;
  put_u32(out, magic);
  for (auto s : sizes) put_u32(out, s);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Bytes pattern(std::size_t n, unsigned modulo) {
  Bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>((i * 7 + 3) % modulo);
  return out;
}

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Each test writes its own files into a fresh temporary folder.
class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("fast_idx_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write_gz(const std::string& name, const Bytes& bytes) {
    const fs::path path = dir_ / name;
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
    return path;
  }

  fs::path images(const std::string& name, std::uint32_t count) {
    return write_gz(name, idx(kIdxImagesMagic, {count, 28, 28}, pattern(count * 784u, 256)));
  }
  fs::path labels(const std::string& name, std::uint32_t count) {
    return write_gz(name, idx(kIdxLabelsMagic, {count}, pattern(count, 10)));
  }

  fs::path dir_;
};

// Runs f, expects exception E whose message contains every one of the parts.
template <typename E, typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& part : parts) EXPECT_NE(what.find(part), std::string::npos) << "'" << part << "' not in: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

TEST_F(IdxFiles, ReadsValidImagesAndLabels) {
  const auto img = read_idx_images(images("img.gz", 3));
  EXPECT_EQ(img.count, 3u);
  EXPECT_EQ(img.rows, 28u);
  EXPECT_EQ(img.cols, 28u);
  EXPECT_EQ(img.pixels, pattern(3 * 784, 256));
  EXPECT_EQ(read_idx_labels(labels("lab.gz", 5)), pattern(5, 10));
}

TEST_F(IdxFiles, ReadsAnEmptySet) {
  EXPECT_TRUE(read_idx_images(images("img.gz", 0)).pixels.empty());
  EXPECT_TRUE(read_idx_labels(labels("lab.gz", 0)).empty());
}

TEST_F(IdxFiles, TruncatedPayloadIsInvalidArgumentWithExpectedAndGotSizes) {
  const auto path = write_gz("short.gz", idx(kIdxImagesMagic, {2, 28, 28}, pattern(1500, 256)));
  expect_error<InvalidArgument>([&] { read_idx_images(path); },
                                {path.string(), "truncated", "expected 1568 bytes", "got 1500"});
}

TEST_F(IdxFiles, TrailingBytesAreInvalidArgument) {
  const auto path = write_gz("long.gz", idx(kIdxLabelsMagic, {4}, pattern(7, 10)));
  expect_error<InvalidArgument>([&] { read_idx_labels(path); },
                                {path.string(), "trailing", "expected 4 bytes", "got 3 more"});
}

TEST_F(IdxFiles, WrongMagicIsInvalidArgumentNamingExpectedAndGot) {
  const auto path = labels("labels-as-images.gz", 4);
  expect_error<InvalidArgument>([&] { read_idx_images(path); },
                                {path.string(), "expected 3 (magic 0x00000803)", "got 1 (magic 0x00000801)"});
  const auto f32 = write_gz("floats.gz", idx(0x00000D01, {1}, Bytes(4)));
  expect_error<InvalidArgument>([&] { read_idx_labels(f32); }, {f32.string(), "expected 0x00000801", "got 0x00000d01"});
}

TEST_F(IdxFiles, WrongDimensionCountIsInvalidArgument) {
  const auto path = write_gz("2d.gz", idx(0x00000802, {2, 784}, pattern(1568, 256)));
  expect_error<InvalidArgument>([&] { read_idx_images(path); }, {path.string(), "dimensions", "expected 3", "got 2"});
}

TEST_F(IdxFiles, WrongImageSizeIsInvalidArgument) {
  const auto path = write_gz("27.gz", idx(kIdxImagesMagic, {1, 28, 27}, pattern(756, 256)));
  expect_error<InvalidArgument>([&] { read_idx_images(path); }, {path.string(), "expected 28x28", "got 28x27"});
}

TEST_F(IdxFiles, TruncatedHeaderIsInvalidArgument) {
  const auto path = write_gz("header.gz", Bytes{0, 0, 8, 3, 0, 0});
  expect_error<InvalidArgument>([&] { read_idx_images(path); },
                                {path.string(), "header", "expected 12 bytes", "got 2"});
}

// A declared size that the file could not hold even at deflate's best ratio (1032:1) is refused
// before anything is read, naming the file and the declared count; one it could hold fails on the
// data present.
TEST_F(IdxFiles, HugeDeclaredCountIsRefusedAgainstTheFileSize) {
  const auto path = write_gz("huge.gz", idx(kIdxImagesMagic, {0xFFFFFFFFu, 28, 28}, pattern(784, 256)));
  expect_error<InvalidArgument>([&] { read_idx_images(path); },
                                {path.string(), "4294967295 images of 28x28 (3367254359280 bytes)",
                                 "more than a file of " + std::to_string(fs::file_size(path)) + " bytes"});
  const auto labels_path = write_gz("huge-labels.gz", idx(kIdxLabelsMagic, {0xFFFFFFFFu}, pattern(10, 10)));
  expect_error<InvalidArgument>([&] { read_idx_labels(labels_path); }, {labels_path.string(), "4294967295 labels"});
  const auto some = write_gz("some.gz", idx(kIdxImagesMagic, {20, 28, 28}, pattern(784, 256)));
  expect_error<InvalidArgument>([&] { read_idx_images(some); }, {some.string(), "expected 15680 bytes", "got 784"});
}

TEST_F(IdxFiles, CorruptCrcIsIoErrorQuotingZlib) {
  const auto path = labels("crc.gz", 100);
  Bytes gz = read_bytes(path);
  gz[gz.size() - 8] ^= 0xFF;  // the CRC-32 of the gzip trailer
  write_bytes(path, gz);
  expect_error<IoError>([&] { read_idx_labels(path); }, {path.string(), "corrupt gzip", "incorrect data check"});
}

TEST_F(IdxFiles, CorruptDeflateDataIsIoError) {
  const auto path = images("deflate.gz", 10);
  Bytes gz = read_bytes(path);
  for (std::size_t i = 10; i < 40; ++i) gz[i] = 0xFF;  // right after the 10-byte gzip header: invalid block type
  write_bytes(path, gz);
  expect_error<IoError>([&] { read_idx_images(path); }, {path.string(), "corrupt gzip", "zlib reports"});
}

TEST_F(IdxFiles, CutGzipFileIsIoError) {
  const auto path = images("cut.gz", 50);
  Bytes gz = read_bytes(path);
  gz.resize(gz.size() / 2);
  write_bytes(path, gz);
  expect_error<IoError>([&] { read_idx_images(path); }, {path.string(), "corrupt gzip", "unexpected end of file"});
}

TEST_F(IdxFiles, MissingFileIsIoError) {
  const auto path = dir_ / "absent.gz";
  expect_error<IoError>([&] { read_idx_labels(path); }, {path.string(), "no such file"});
  expect_error<IoError>([&] { read_idx_labels(dir_); }, {dir_.string(), "directory"});
}

TEST_F(IdxFiles, SplitWithLabelOutOfRangeIsInvalidArgument) {
  Bytes lab = pattern(6, 10);
  lab[4] = 10;
  const auto lab_path = write_gz("lab.gz", idx(kIdxLabelsMagic, {6}, lab));
  expect_error<InvalidArgument>([&] { load_idx_split(images("img.gz", 6), lab_path); },
                                {lab_path.string(), "index 4", "expected < 10", "got 10"});
}

TEST_F(IdxFiles, SplitWithCountMismatchIsInvalidArgument) {
  const auto img = images("img.gz", 5);
  const auto lab = labels("lab.gz", 6);
  expect_error<InvalidArgument>([&] { load_idx_split(img, lab); }, {img.string(), lab.string(), "expected 6", "got 5"});
}

TEST_F(IdxFiles, SplitNormalisesPixelsAndWidensLabels) {
  Bytes pix(2 * 784, 0);
  pix[784] = 255;
  pix[785] = 51;
  const auto img = write_gz("img.gz", idx(kIdxImagesMagic, {2, 28, 28}, pix));
  const auto lab = write_gz("lab.gz", idx(kIdxLabelsMagic, {2}, Bytes{9, 0}));
  const auto data = load_idx_split(img, lab);
  ASSERT_EQ(data->size(), 2);
  EXPECT_EQ(data->samples.sizes(), (std::vector<std::int64_t>{2, 1, 28, 28}));
  EXPECT_EQ(data->samples.scalar_type(), ::torch::kFloat32);
  EXPECT_EQ(data->labels.scalar_type(), ::torch::kInt64);
  const float* x = data->samples.data_ptr<float>();
  EXPECT_NEAR(x[0], (0.0 - 0.2860) / 0.3530, 1e-6);
  EXPECT_NEAR(x[784], (1.0 - 0.2860) / 0.3530, 1e-6);
  EXPECT_NEAR(x[785], (0.2 - 0.2860) / 0.3530, 1e-6);
  EXPECT_EQ(data->labels[0].item<std::int64_t>(), 9);
  EXPECT_EQ(data->labels[1].item<std::int64_t>(), 0);
}

// Every pixel value, at every position of a vector's lanes and of the tail: bit for bit what
// torch's uint8 -> float32 conversion followed by / 255, - mean and / std gives on the whole tensor.
TEST_F(IdxFiles, SplitNormalisesEveryPixelValueAsTorchDoesOnTheWholeTensor) {
  const std::int64_t n = 3;
  Bytes pix(static_cast<std::size_t>(n) * 784);
  for (std::size_t i = 0; i < pix.size(); ++i) pix[i] = static_cast<std::uint8_t>((i * 7 + i / 256) % 256);
  const auto img = write_gz("img.gz", idx(kIdxImagesMagic, {3, 28, 28}, pix));
  const auto lab = write_gz("lab.gz", idx(kIdxLabelsMagic, {3}, Bytes{1, 2, 3}));
  const auto data = load_idx_split(img, lab);
  ::torch::Tensor raw = ::torch::empty({n, 1, 28, 28}, ::torch::kUInt8);
  std::memcpy(raw.data_ptr<std::uint8_t>(), pix.data(), pix.size());
  const ::torch::Tensor expected = raw.to(::torch::kFloat32).div_(255.0).sub_(kFashionMnistMean).div_(kFashionMnistStd);
  ASSERT_EQ(data->samples.sizes(), expected.sizes());
  const float* got = data->samples.data_ptr<float>();
  const float* want = expected.data_ptr<float>();
  std::set<std::uint8_t> seen;
  for (std::size_t i = 0; i < pix.size(); ++i) {
    seen.insert(pix[i]);
    ASSERT_EQ(std::memcmp(got + i, want + i, sizeof(float)), 0)
        << "pixel " << i << " value " << int{pix[i]} << ": got " << got[i] << ", torch " << want[i];
  }
  EXPECT_EQ(seen.size(), 256u);
}

// The pixels kept as codes (SplitForm::codes, the training split's form) give, through features,
// features_of and slice, bit for bit the features of the float32 form: every pixel value, rows
// picked in any order, a slice that shares the codes; a range outside the samples is refused.
TEST_F(IdxFiles, PixelsKeptAsCodesDecodeToTheFeaturesBitForBit) {
  const std::int64_t n = 5;
  Bytes pix(static_cast<std::size_t>(n) * 784);
  for (std::size_t i = 0; i < pix.size(); ++i) pix[i] = static_cast<std::uint8_t>((i * 11 + i / 200) % 256);
  const auto img = write_gz("img.gz", idx(kIdxImagesMagic, {5, 28, 28}, pix));
  const auto lab = write_gz("lab.gz", idx(kIdxLabelsMagic, {5}, Bytes{4, 3, 2, 1, 0}));
  const auto floats = load_idx_split(img, lab, SplitForm::features);
  const auto codes = load_idx_split(img, lab, SplitForm::codes);
  ASSERT_EQ(codes->samples.scalar_type(), ::torch::kUInt8);
  ASSERT_EQ(codes->samples.sizes(), floats->samples.sizes());
  EXPECT_EQ(std::memcmp(codes->samples.data_ptr<std::uint8_t>(), pix.data(), pix.size()), 0);
  EXPECT_TRUE(::torch::equal(codes->labels, floats->labels));
  EXPECT_EQ(codes->bytes(), pix.size() + 256 * 4 + 5 * 8);
  EXPECT_EQ(floats->bytes(), pix.size() * 4 + 5 * 8);
  auto same_bits = [](const ::torch::Tensor& a, const ::torch::Tensor& b) {
    return a.scalar_type() == ::torch::kFloat32 && a.sizes() == b.sizes() &&
           std::memcmp(a.contiguous().data_ptr<float>(), b.contiguous().data_ptr<float>(),
                       static_cast<std::size_t>(a.numel()) * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same_bits(codes->features(0, n), floats->samples));
  EXPECT_TRUE(same_bits(codes->features(1, 3), floats->samples.narrow(0, 1, 3)));
  EXPECT_TRUE(same_bits(floats->features(1, 3), floats->samples.narrow(0, 1, 3)));
  const ::torch::Tensor rows = ::torch::tensor({4, 0, 4, 2}, ::torch::kInt64);
  EXPECT_TRUE(same_bits(codes->features_of(rows), floats->samples.index_select(0, rows)));
  const Dataset tail = codes->slice(3, 2);
  EXPECT_EQ(tail.size(), 2);
  EXPECT_EQ(tail.samples.data_ptr<std::uint8_t>(), codes->samples.data_ptr<std::uint8_t>() + 3 * 784);
  EXPECT_TRUE(same_bits(tail.features(0, 2), floats->samples.narrow(0, 3, 2)));
  EXPECT_EQ(tail.labels[1].item<std::int64_t>(), 0);
  expect_error<InvalidArgument>([&] { (void)codes->features(3, 3); }, {"within [0, 5)", "got 3 from 3"});
  expect_error<InvalidArgument>([&] { (void)codes->slice(-1, 2); }, {"within [0, 5)", "got 2 from -1"});
  expect_error<InvalidArgument>([&] { (void)codes->features(1, INT64_MAX); }, {"within [0, 5)"});
  EXPECT_EQ(codes->features(5, 0).sizes(), (std::vector<std::int64_t>{0, 1, 28, 28}));
  Dataset short_table = *codes;
  short_table.code_values = short_table.code_values.narrow(0, 0, 255);
  expect_error<InvalidArgument>([&] { (void)short_table.features(0, 1); },
                                {"256 contiguous float32", "got 255 float32"});
}

TEST_F(IdxFiles, MissingDatasetFileIsIoErrorNamingItAndThePackage) {
  labels("train-labels-idx1-ubyte.gz", 1);
  expect_error<IoError>([&] { load_fashion_mnist(dir_); },
                        {(dir_ / "train-images-idx3-ubyte.gz").string(), "dataset-fashion-mnist"});
}

// Each of the four files is read uncompressed where it is there (name without .gz), else from its
// .gz: here the uncompressed training labels (all 3) win over their .gz (0..9), the other files
// come from their .gz; without the uncompressed file the .gz is read.
TEST_F(IdxFiles, AnUncompressedDatasetFileIsReadBeforeItsGz) {
  images("train-images-idx3-ubyte.gz", 20);
  labels("train-labels-idx1-ubyte.gz", 20);
  images("t10k-images-idx3-ubyte.gz", 10);
  labels("t10k-labels-idx1-ubyte.gz", 10);
  write_bytes(dir_ / "train-labels-idx1-ubyte", idx(kIdxLabelsMagic, {20}, Bytes(20, 3)));
  const FashionMnist both = load_fashion_mnist(dir_);
  EXPECT_TRUE(::torch::equal(both.train->labels, ::torch::full({20}, 3, ::torch::kInt64)));
  const Bytes expected = pattern(10, 10);
  for (std::int64_t i = 0; i < 10; ++i) EXPECT_EQ(both.test->labels[i].item<std::int64_t>(), expected[i]);
  fs::remove(dir_ / "train-labels-idx1-ubyte");
  const FashionMnist gz = load_fashion_mnist(dir_);
  const Bytes train_expected = pattern(20, 10);
  for (std::int64_t i = 0; i < 20; ++i) EXPECT_EQ(gz.train->labels[i].item<std::int64_t>(), train_expected[i]);
  EXPECT_TRUE(::torch::equal(gz.train->samples, both.train->samples));
}

// A test set that is empty, or smaller than the worker count (each worker scores a slice), is
// refused when the data is read, before any training (it used to fail at the first evaluation).
TEST_F(IdxFiles, ATestSetTooSmallForTheWorkersIsRefusedBeforeTraining) {
  images("train-images-idx3-ubyte.gz", 64);
  labels("train-labels-idx1-ubyte.gz", 64);
  for (std::uint32_t test : {0u, 2u}) {
    images("t10k-images-idx3-ubyte.gz", test);
    labels("t10k-labels-idx1-ubyte.gz", test);
    training::TrainOptions o;
    o.data_dir = dir_;
    o.workers = 3;
    o.batch = 4;
    o.steps = 2;
    bool trained = false;
    try {
      torch::train(o, [&](const training::Progress&) { trained = true; });
      ADD_FAILURE() << "a test set of " << test << " images was accepted for 3 workers";
    } catch (const core::InvalidArgument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(dir_.string()), std::string::npos) << what;
      EXPECT_NE(what.find(test == 0 ? "is empty" : "has 2 samples, fewer than the 3 workers"), std::string::npos)
          << what;
    }
    EXPECT_FALSE(trained);
  }
}

}  // namespace
}  // namespace fast::torch
