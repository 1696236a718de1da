// CURVE key files and allow-lists (include/fast/runtime/zmq/keys.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/run_fast.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/zmq/keys.hpp"

namespace fast::runtime::zmq {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const core::InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(Keys, KeyFileRoundTripsWithMode0600AndRefusesToOverwrite) {
  const fs::path dir = testing::test_dir("fast_keys_test", "roundtrip");
  const KeyPair k = generate_key_pair();
  EXPECT_TRUE(valid_z85_key(k.public_key));
  EXPECT_TRUE(valid_z85_key(k.secret_key));
  EXPECT_NE(k.public_key, k.secret_key);
  write_key_file(dir / "a.key", k);
  EXPECT_EQ(fs::status(dir / "a.key").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  const KeyPair r = read_key_file(dir / "a.key");
  EXPECT_EQ(r.public_key, k.public_key);
  EXPECT_EQ(r.secret_key, k.secret_key);
  EXPECT_NE(error_of([&] { write_key_file(dir / "a.key", generate_key_pair()); }).find("exists already"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Keys, BadKeyFilesNameTheFileAndLine) {
  const fs::path dir = testing::test_dir("fast_keys_test", "bad");
  const KeyPair k = generate_key_pair();
  std::ofstream(dir / "short.key") << "public = \"" << k.public_key << "\"\nsecret = \"abc\"\n";
  const std::string e = error_of([&] { read_key_file(dir / "short.key"); });
  EXPECT_NE(e.find("short.key' line 2: expected a 40-character Z85 key, got 3 characters"), std::string::npos) << e;
  std::ofstream(dir / "junk.key") << "hello\n";
  EXPECT_NE(error_of([&] { read_key_file(dir / "junk.key"); }).find("line 1: expected public = "), std::string::npos);
  std::ofstream(dir / "half.key") << "public = \"" << k.public_key << "\"\n";
  EXPECT_NE(error_of([&] { read_key_file(dir / "half.key"); }).find("both a public and a secret"), std::string::npos);
  EXPECT_NE(error_of([&] { read_key_file(dir / "missing.key"); }).find("cannot be read"), std::string::npos);
  std::string bad = k.public_key;
  bad[5] = '"';  // not in the Z85 alphabet
  EXPECT_FALSE(valid_z85_key(bad));
  EXPECT_FALSE(valid_z85_key(k.public_key.substr(1)));
  fs::remove_all(dir);
}

TEST(Keys, AllowListKeepsOrderNamesAndRejectsBadLines) {
  const fs::path dir = testing::test_dir("fast_keys_test", "allow");
  KeyPair a = generate_key_pair(), b = generate_key_pair();
  a.public_key[7] = '#';  // '#' is a Z85 character: only a line that starts with it is a comment
  ASSERT_TRUE(valid_z85_key(a.public_key));
  write_allow_file(dir / "allow.txt", {{a.public_key, "host-a"}, {b.public_key, ""}});
  const auto keys = read_allow_file(dir / "allow.txt");
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].public_key, a.public_key);
  EXPECT_EQ(keys[0].name, "host-a");
  EXPECT_EQ(keys[1].public_key, b.public_key);
  std::ofstream(dir / "bad.txt") << "# comment\n\n" << a.public_key << "\nnot-a-key\n";
  EXPECT_NE(error_of([&] { read_allow_file(dir / "bad.txt"); }).find("bad.txt' line 4"), std::string::npos);
  std::ofstream(dir / "empty.txt") << "# nothing\n";
  EXPECT_NE(error_of([&] { read_allow_file(dir / "empty.txt"); }).find("at least one public key"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fast::runtime::zmq
