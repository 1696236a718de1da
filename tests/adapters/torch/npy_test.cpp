// .npy/.npz reading (npy.hpp). Files are written byte by byte from the format's description
// (numpy.lib.format: magic, version, little-endian header length, a Python dict literal padded
// with spaces to a multiple of 64 bytes, then the raw data), and .npz archives with libzip's
// writer; tests/tools/model_data_files_test.py reads files written by NumPy itself.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <zip.h>

#include "common/temp_dir_test.hpp"
#include "fast/adapters/torch/npy.hpp"
#include "fast/core/error.hpp"

namespace fast::torch {
namespace {

namespace fs = std::filesystem;

// A .npy file's bytes: `dict` is the header dict's text, `data` the raw data.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, const char* order = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
}

template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

class Npy : public fast::testing::TempDirTest {
 protected:
  fs::path write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return dir_ / name;
  }
  // `expected` must appear in the InvalidArgument that reading `bytes` raises, with the file name.
  void expect_refused(const std::string& bytes, const std::string& expected) {
    const fs::path file = write("bad.npy", bytes);
    try {
      (void)read_npy(file);
      ADD_FAILURE() << "accepted; expected: " << expected;
    } catch (const InvalidArgument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file.string()), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  }
};

TEST_F(Npy, ReadsFloatAndIntegerArraysOfEveryVersion) {
  const NpyArray f = read_npy(write("f.npy", npy(dict("<f4", "(2, 3)"), raw<float>({1, 2, 3, 4, 5, 6.5f}))));
  EXPECT_EQ(f.type, NpyType::f32);
  EXPECT_EQ(f.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(f.count(), 6);
  EXPECT_DOUBLE_EQ(f.number(5), 6.5);
  const NpyArray l = read_npy(write("l.npy", npy(dict("<i8", "(3,)"), raw<std::int64_t>({7, -1, 9}), 2)));
  EXPECT_EQ(l.shape, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(l.integer(1), -1);
  const NpyArray u = read_npy(write("u.npy", npy(dict("|u1", "(2, 2)"), std::string("\x01\x02\xff\x00", 4), 3)));
  EXPECT_EQ(u.integer(2), 255);
  const NpyArray d = read_npy(write("d.npy", npy(dict("<f8", "(1, 1)", "True"), raw<double>({0.25}))));
  EXPECT_DOUBLE_EQ(d.number(0), 0.25);  // Fortran order of one element is C order
  // Keys in another order and double quotes, as other writers may put them.
  const NpyArray q = read_npy(write(
      "q.npy", npy("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<u2\"}", raw<std::uint16_t>({3, 65535}))));
  EXPECT_EQ(q.integer(1), 65535);
  EXPECT_EQ(descr_of(NpyType::u8), "|u1");
  EXPECT_EQ(descr_of(NpyType::f64), "<f8");
}

TEST_F(Npy, TruncatedOrOverlongDataIsRefusedWithTheByteCounts) {
  expect_refused(npy(dict("<f4", "(2, 3)"), raw<float>({1, 2, 3, 4, 5})),
                 "truncated: shape (2, 3) of <f4 needs 24 bytes of data, got 20");
  expect_refused(npy(dict("<f4", "(1,)"), raw<float>({1, 2})), "4 bytes after the data of shape (1)");
  std::string cut = npy(dict("<f4", "(1,)"), raw<float>({1}));
  cut.resize(40);  // inside the header
  expect_refused(cut, "npy header of 118 bytes");
}

TEST_F(Npy, HostileShapesAreRefusedBeforeAnyAllocation) {
  // 2^62 x 4 bytes, and a product that overflows 64 bits: both refused from the header alone.
  expect_refused(npy(dict("<f4", "(4611686018427387904,)"), ""),
                 "a dimension of shape (4611686018427387904,): expected an integer from 0 to 4611686018427387903, got "
                 "4611686018427387904");
  expect_refused(npy(dict("<f4", "(99999999999999999999999,)"), ""), "got '99999999999999999999999'");
  expect_refused(npy(dict("<f8", "(4294967296, 4294967296)"), ""), "too large");
  expect_refused(npy(dict("<f4", "(100000000, 100000)"), raw<float>({1})), "truncated");
  expect_refused(npy(dict("<f4", "(-1,)"), ""), "non-negative integers in shape");
  expect_refused(npy(dict("<f4", "[2, 3]"), ""), "expected shape to be a tuple");
}

TEST_F(Npy, WrongMagicVersionOrTypeIsRefused) {
  std::string bad = npy(dict("<f4", "(1,)"), raw<float>({1}));
  bad[1] = 'X';
  expect_refused(bad, "not a .npy array: expected the magic");
  bad = npy(dict("<f4", "(1,)"), raw<float>({1}));
  bad[6] = 9;
  expect_refused(bad, "npy version 9.0: expected version 1.0, 2.0 or 3.0");
  expect_refused(npy(dict(">f4", "(1,)"), raw<float>({1})), "is big-endian");
  expect_refused(npy(dict("<c8", "(1,)"), raw<double>({1})), "unsupported element type '<c8'");
  expect_refused(npy(dict("|b1", "(1,)"), "\x01"), "unsupported element type '|b1'");
  expect_refused(npy(dict("<f4", "(2, 2)", "True"), raw<float>({1, 2, 3, 4})), "Fortran order");
  expect_refused(npy("{'descr': '<f4', 'fortran_order': False}", ""), "expected the key 'shape'");
  expect_refused("short", "expected at least 10 bytes, got 5");
}

// write_npy's file reads back whole (every value, the 1-D shape) and its data starts at a multiple of
// 64 bytes, as NumPy's format asks; no temporary file is left beside it.
TEST_F(Npy, WrittenFilesReadBackExactly) {
  for (std::size_t n : {0UL, 1UL, 13UL, 1000UL}) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) * -0.375f + 1e-7f;
    const fs::path file = dir_ / "sub" / ("w" + std::to_string(n) + ".npy");
    write_npy(file, values);
    const NpyArray a = read_npy(file);
    EXPECT_EQ(a.type, NpyType::f32);
    EXPECT_EQ(a.shape, (std::vector<std::int64_t>{static_cast<std::int64_t>(n)}));
    ASSERT_EQ(a.bytes.size(), n * sizeof(float));
    if (n > 0) {
      EXPECT_EQ(std::memcmp(a.bytes.data(), values.data(), a.bytes.size()), 0);
    }
    EXPECT_EQ((fs::file_size(file) - n * sizeof(float)) % 64, 0U);
    EXPECT_FALSE(fs::exists(file.string() + ".tmp"));
  }
}

TEST_F(Npy, MissingFileIsAnIoError) { EXPECT_THROW((void)read_npy(dir_ / "none.npy"), IoError); }

// A .npz of the given members, written with libzip (stored, or deflated when `compress`).
fs::path write_npz(const fs::path& file, const std::vector<std::pair<std::string, std::string>>& members,
                   bool compress) {
  int error = 0;
  zip_t* z = zip_open(file.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  EXPECT_NE(z, nullptr);
  for (const auto& [name, bytes] : members) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t index = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE);
    EXPECT_GE(index, 0);
    zip_set_file_compression(z, static_cast<zip_uint64_t>(index), compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  EXPECT_EQ(zip_close(z), 0);
  return file;
}

TEST_F(Npy, ReadsStoredAndDeflatedNpzMembers) {
  const std::string x = npy(dict("<f4", "(2, 2)"), raw<float>({1, 2, 3, 4}));
  const std::string y = npy(dict("<i8", "(2,)"), raw<std::int64_t>({0, 1}));
  for (const bool compress : {false, true}) {
    const auto arrays = read_npz(write_npz(dir_ / "d.npz", {{"x.npy", x}, {"y.npy", y}}, compress));
    ASSERT_EQ(arrays.size(), 2u);
    EXPECT_DOUBLE_EQ(arrays.at("x").number(3), 4.0);
    EXPECT_EQ(arrays.at("y").integer(1), 1);
  }
}

TEST_F(Npy, BadNpzArchivesNameTheFileAndMember) {
  const fs::path not_zip = write("plain.npz", "not a zip");
  try {
    (void)read_npz(not_zip);
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(not_zip.string() + ": not a .npz archive"), std::string::npos) << e.what();
  }
  std::string truncated = npy(dict("<f4", "(3,)"), raw<float>({1, 2}));
  try {
    (void)read_npz(write_npz(dir_ / "t.npz", {{"x.npy", truncated}}, true));
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("t.npz: member x.npy: truncated"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_npz(write_npz(dir_ / "o.npz", {{"notes.txt", "hello"}}, false)), InvalidArgument);
  EXPECT_THROW((void)read_npz(dir_ / "none.npz"), IoError);
}

}  // namespace
}  // namespace fast::torch
