// Dataset files whose declared sizes lie (the issue "Nothing silently wrong": a dataset's declared
// sizes are trusted): `fast train` refuses each with exit code 2 and a message naming the file and
// the value, instead of allocating for what the file claims (a label of 2^40 sized the model for
// 2^40 classes and ended in a libtorch backtrace, exit 1). Every run is bounded by `timeout`.

#include <gtest/gtest.h>

#include <zip.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/run_fast.hpp"

namespace {

namespace fs = std::filesystem;
namespace exit_code = fast::core::exit_code;

// A .npy file's bytes (version 1.0): the header dict padded to 64 bytes, then `data` as given.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)};
}

void write_file(const fs::path& file, const std::string& bytes) { std::ofstream(file, std::ios::binary) << bytes; }

void write_npz(const fs::path& file, const std::string& x, const std::string& y) {
  int error = 0;
  zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  ASSERT_NE(z, nullptr);
  for (const auto& [name, bytes] : {std::pair{"x.npy", &x}, std::pair{"y.npy", &y}})
    ASSERT_GE(zip_file_add(z, name, zip_source_buffer(z, bytes->data(), bytes->size(), 0), ZIP_FL_OVERWRITE), 0);
  ASSERT_EQ(zip_close(z), 0);
}

void expect_refused(const std::string& args, const std::vector<std::string>& expected) {
  const auto r =
      fast::testing::run_command("timeout -k 5 120 " + std::string(FAST_TEST_BIN_DIR) +
                                 "/fast train --steps 1 --workers 1 --batch 2 --progress never " + args + " 2>&1");
  EXPECT_EQ(r.code, exit_code::bad_input) << args << "\n" << r.output;
  for (const std::string& part : expected)
    EXPECT_NE(r.output.find(part), std::string::npos) << args << ": no '" << part << "' in\n" << r.output;
  EXPECT_EQ(r.output.find("libtorch"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(".cpp:"), std::string::npos) << r.output;
}

const std::string kFeatures = npy("<f4", "(4, 2)", raw<float>({1, 2, 3, 4, 5, 6, 7, 8}));

TEST(HostileData, AHugeLabelIsRefusedNamingTheFileAndTheLabel) {
  const fs::path dir = fast::testing::test_dir("fast_hostile_data", "label");
  write_npz(dir / "train.npz", kFeatures, npy("<i8", "(4,)", raw<std::int64_t>({0, 1, 0, std::int64_t{1} << 40})));
  write_npz(dir / "test.npz", kFeatures, npy("<i8", "(4,)", raw<std::int64_t>({0, 1, 0, 1})));
  expect_refused(
      "--dataset npz:train=" + (dir / "train.npz").string() + ",test=" + (dir / "test.npz").string(),
      {(dir / "train.npz").string(), "label out of range at index 3", "at most 100000 classes", "1099511627776"});
}

TEST(HostileData, AShapeTheFileDoesNotHoldIsRefusedNamingTheFileAndTheShape) {
  const fs::path dir = fast::testing::test_dir("fast_hostile_data", "shape");
  const std::string labels = npy("<i8", "(4,)", raw<std::int64_t>({0, 1, 0, 1}));
  write_file(dir / "x.npy", npy("<f4", "(100000, 784)", raw<float>({1, 2, 3, 4, 5, 6, 7, 8})));
  write_file(dir / "y.npy", labels);
  write_file(dir / "tx.npy", kFeatures);
  write_file(dir / "ty.npy", labels);
  expect_refused("--dataset npy:train_x=" + (dir / "x.npy").string() + ",train_y=" + (dir / "y.npy").string() +
                     ",test_x=" + (dir / "tx.npy").string() + ",test_y=" + (dir / "ty.npy").string(),
                 {(dir / "x.npy").string(), "truncated", "shape (100000, 784)", "needs 313600000 bytes", "got 32"});
  // Inside an archive, the member's shape against the member's bytes.
  write_npz(dir / "train.npz", npy("<f4", "(4, 1000000000)", raw<float>({1, 2})), labels);
  write_npz(dir / "test.npz", kFeatures, labels);
  expect_refused("--dataset npz:train=" + (dir / "train.npz").string() + ",test=" + (dir / "test.npz").string(),
                 {(dir / "train.npz").string(), "member x.npy", "shape (4, 1000000000)"});
}

// IDX (the fashion-mnist kind): a declared image count the file could not hold even compressed.
TEST(HostileData, AnIdxCountBeyondTheFileIsRefusedNamingTheFileAndTheCount) {
  const fs::path dir = fast::testing::test_dir("fast_hostile_data", "idx");
  auto idx = [](std::uint32_t magic, const std::vector<std::uint32_t>& sizes, std::size_t payload) {
    std::string out;
    auto put = [&](std::uint32_t v) {
      for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
    };
    put(magic);
    for (std::uint32_t s : sizes) put(s);
    return out + std::string(payload, '\x01');
  };
  write_file(dir / "train-images-idx3-ubyte", idx(0x803, {0xFFFFFFFFu, 28, 28}, 784));
  write_file(dir / "train-labels-idx1-ubyte", idx(0x801, {1}, 1));
  write_file(dir / "t10k-images-idx3-ubyte", idx(0x803, {1, 28, 28}, 784));
  write_file(dir / "t10k-labels-idx1-ubyte", idx(0x801, {1}, 1));
  expect_refused("--data-dir " + dir.string(),
                 {(dir / "train-images-idx3-ubyte").string(), "4294967295 images of 28x28", "more than a file of"});
}

}  // namespace
