// CURVE key pairs, key files and allow-lists (fast/runtime/zmq/keys.hpp).

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error_message.hpp"
#include "common/run_fast.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/zmq/keys.hpp"

namespace fast::runtime::zmq {
namespace {

namespace fs = std::filesystem;
using fast::testing::expect_error;

fs::path dir(const std::string& name) { return fast::testing::test_dir("fast_keys_test", name); }

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::trunc) << text; }

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A well-formed key file's text for keys.
std::string key_text(const KeyPair& k) {
  return "# FAST CURVE key pair (fast keygen). Keep it secret.\npublic = \"" + k.public_key + "\"\nsecret = \"" +
         k.secret_key + "\"\n";
}

TEST(Keys, GeneratedPairsAreValidAndDistinct) {
  const KeyPair a = generate_key_pair();
  const KeyPair b = generate_key_pair();
  EXPECT_EQ(a.public_key.size(), 40u);
  EXPECT_TRUE(valid_z85_key(a.public_key));
  EXPECT_TRUE(valid_z85_key(a.secret_key));
  EXPECT_NE(a.public_key, b.public_key);
  EXPECT_NE(a.secret_key, a.public_key);
}

TEST(Keys, ValidZ85KeyRejectsWrongLengthCharacterAndOverflow) {
  const std::string key = generate_key_pair().public_key;
  EXPECT_TRUE(valid_z85_key(key));
  EXPECT_FALSE(valid_z85_key(key.substr(0, 39)));
  EXPECT_FALSE(valid_z85_key(key + "0"));
  EXPECT_FALSE(valid_z85_key(""));
  std::string bad = key;
  bad[7] = '~';  // not in the Z85 alphabet
  EXPECT_FALSE(valid_z85_key(bad));
  bad[7] = '"';
  EXPECT_FALSE(valid_z85_key(bad));
  // "#####" is 85^5 - 1 > 2^32 - 1: Z85 text that decodes to no 32-bit group.
  EXPECT_FALSE(valid_z85_key("#####" + key.substr(5)));
  EXPECT_TRUE(valid_z85_key("%nSc0" + key.substr(5)));  // 0xFFFFFFFF, the largest group
}

TEST(Keys, KeyFileRoundTripsWithMode0600AndTheDocumentedText) {
  const fs::path p = dir("roundtrip") / "host.key";
  fs::remove(p);
  const KeyPair k = generate_key_pair();
  write_key_file(p, k);
  EXPECT_EQ(mode_of(p), 0600u);
  EXPECT_EQ(read_text(p), key_text(k));
  const KeyPair back = read_key_file(p);
  EXPECT_EQ(back.public_key, k.public_key);
  EXPECT_EQ(back.secret_key, k.secret_key);
}

TEST(Keys, WriteKeyFileRefusesToOverwriteUnlessAsked) {
  const fs::path p = dir("overwrite") / "host.key";
  fs::remove(p);
  const KeyPair first = generate_key_pair();
  const KeyPair second = generate_key_pair();
  write_key_file(p, first);
  expect_error<InvalidArgument>([&] { write_key_file(p, second); }, {p.string(), "already exists", "refusing"});
  EXPECT_EQ(read_key_file(p).secret_key, first.secret_key);
  ::chmod(p.c_str(), 0644);
  write_key_file(p, second, true);
  EXPECT_EQ(read_key_file(p).secret_key, second.secret_key);
  EXPECT_EQ(mode_of(p), 0600u);
}

TEST(Keys, WriteKeyFileRejectsInvalidKeysWithoutCreatingTheFile) {
  const fs::path p = dir("invalid_write") / "host.key";
  fs::remove(p);
  KeyPair k = generate_key_pair();
  k.secret_key.pop_back();
  expect_error<InvalidArgument>([&] { write_key_file(p, k); }, {"secret key", "expected 40 characters", "got 39"});
  EXPECT_FALSE(fs::exists(p));
}

TEST(Keys, WriteKeyFileIntoMissingFolderIsIoError) {
  expect_error<IoError>([] { write_key_file("/nonexistent-folder-fast/x.key", generate_key_pair()); },
                        {"/nonexistent-folder-fast/x.key", "cannot create"});
}

TEST(Keys, ReadKeyFileToleratesCommentsBlankLinesAndSpaces) {
  const fs::path p = dir("spaces") / "k.key";
  const KeyPair k = generate_key_pair();
  write_text(p, "\n# comment\n  secret   =   \"" + k.secret_key + "\"  \n\npublic=\"" + k.public_key + "\"\r\n");
  ::chmod(p.c_str(), 0600);
  EXPECT_EQ(read_key_file(p).public_key, k.public_key);
}

// Each error of read_key_file: file, line, expected and got; never the secret.
TEST(Keys, ReadKeyFileErrorsNameFileLineExpectedAndGot) {
  const fs::path p = dir("errors") / "bad.key";
  const KeyPair k = generate_key_pair();
  const auto expect_read_error = [&](const std::string& text, std::initializer_list<std::string_view> fragments) {
    write_text(p, text);
    ::chmod(p.c_str(), 0600);
    const std::string what = fast::testing::error_message<InvalidArgument>([&] { read_key_file(p); });
    EXPECT_NE(what.find(p.string()), std::string::npos) << what;
    EXPECT_EQ(what.find(k.secret_key), std::string::npos) << "secret printed: " << what;
    for (std::string_view f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
  };
  const std::string pub = "public = \"" + k.public_key + "\"\n";
  const std::string sec = "secret = \"" + k.secret_key + "\"\n";
  expect_read_error(pub + "colour = \"blue\"\n", {"line 2", "expected `public = \"...\"` or `secret",
                                                  "got a line of 15 characters that names neither"});
  expect_read_error(pub + "just some words\n", {"line 2", "got a line of 15 characters"});
  // A secret line missing its '=', or with ':' for it, or a bare secret key: named by length, the
  // key nowhere (expect_read_error checks the whole key; these check its parts too).
  for (const std::string& line :
       {"secret \"" + k.secret_key + "\"", "secret: \"" + k.secret_key + "\"", k.secret_key + "=",
        "secret \"" + k.secret_key.substr(0, 20) + "=" + k.secret_key.substr(20) + "\""}) {
    write_text(p, pub + line + "\n");
    ::chmod(p.c_str(), 0600);
    const std::string what = fast::testing::error_message<InvalidArgument>([&] { read_key_file(p); });
    EXPECT_NE(what.find("line 2"), std::string::npos) << what;
    EXPECT_EQ(what.find(k.secret_key.substr(0, 8)), std::string::npos) << "secret printed: " << what;
    EXPECT_EQ(what.find(k.secret_key.substr(32)), std::string::npos) << "secret printed: " << what;
  }
  expect_read_error(pub + "secret = " + k.secret_key + "\n", {"line 2", "a quoted key", "got something else"});
  expect_read_error("public = " + k.public_key + "\n" + sec, {"line 1", "a quoted key", "got 'public = "});
  expect_read_error(pub + "secret = \"" + k.secret_key.substr(1) + "\"\n",
                    {"line 2: secret key", "expected 40 characters of the Z85 alphabet", "got 39 characters"});
  std::string bad_pub = k.public_key;
  bad_pub[3] = '~';
  expect_read_error("public = \"" + bad_pub + "\"\n" + sec,
                    {"line 1: public key", "got character '~' at position 4, not in the Z85 alphabet"});
  std::string bad_sec = k.secret_key;
  bad_sec[5] = '~';
  expect_read_error(pub + "secret = \"" + bad_sec + "\"\n",
                    {"line 2: secret key", "not in the Z85 alphabet at position 6"});
  expect_read_error(pub + pub + sec,
                    {"line 2", "expected one `public = ...` line, got a second one (first on line 1)"});
  expect_read_error(pub, {"expected a line `secret = \"<40 Z85 characters>\"`, got none"});
  // The .pub file (or an allow-list) in the key pair's place, or a secret key alone on its line: a bare key.
  expect_read_error(k.public_key + " host-a\n",
                    {"line 1", "got a bare key (not shown): a public key file", "(FILE, without .pub)"});
  expect_read_error(pub + k.secret_key + "\n", {"line 2", "got a bare key (not shown)", "a line `secret = \"...\"`"});
  expect_read_error("# only a comment\n" + sec, {"expected a line `public = "});
  const std::string other = generate_key_pair().public_key;
  expect_read_error(
      "public = \"" + other + "\"\n" + sec,
      {"line 1", "expected the public key of the secret key on line 2 (" + k.public_key + "), got " + other});
}

TEST(Keys, ReadMissingKeyFileNamesIt) {
  expect_error<InvalidArgument>([] { read_key_file("/nonexistent-folder-fast/x.key"); },
                                {"key file '/nonexistent-folder-fast/x.key': cannot open it"});
}

TEST(Keys, ReadKeyFileWarnsWhenOthersCanReadIt) {
  const fs::path p = dir("warn") / "open.key";
  fs::remove(p);
  write_key_file(p, generate_key_pair());
  ::chmod(p.c_str(), 0644);
  ::testing::internal::CaptureStderr();
  read_key_file(p);
  const std::string warned = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("readable by group or others (mode 0644)"), std::string::npos) << warned;
  EXPECT_NE(warned.find("chmod 600"), std::string::npos) << warned;
  ::chmod(p.c_str(), 0600);
  ::testing::internal::CaptureStderr();
  read_key_file(p);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(Keys, AllowFileRoundTripsWithNames) {
  const fs::path p = dir("allow") / "allow.txt";
  const std::vector<AllowedKey> keys = {{generate_key_pair().public_key, "node-a"},
                                        {generate_key_pair().public_key, ""},
                                        {generate_key_pair().public_key, "gpu box 3 # rack 2"}};
  write_allow_file(p, keys);
  const auto back = read_allow_file(p);
  ASSERT_EQ(back.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back[i].public_key, keys[i].public_key);
    EXPECT_EQ(back[i].name, keys[i].name);
  }
}

TEST(Keys, AllowFileIgnoresCommentsBlankLinesAndSurroundingSpace) {
  const fs::path p = dir("allow_space") / "allow.txt";
  const std::string a = generate_key_pair().public_key;
  const std::string b = generate_key_pair().public_key;
  write_text(p, "# run 7\n\n   " + a + "\t  host-a  \n  # " + b + " commented out\n" + b + "\r\n");
  const auto keys = read_allow_file(p);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0].public_key, a);
  EXPECT_EQ(keys[0].name, "host-a");
  EXPECT_EQ(keys[1].public_key, b);
  EXPECT_EQ(keys[1].name, "");
}

TEST(Keys, AllowFileErrorsNameFileAndLine) {
  const fs::path p = dir("allow_errors") / "allow.txt";
  const std::string a = generate_key_pair().public_key;
  write_text(p, "# keys\n" + a + " ok\n" + a.substr(0, 39) + " short\n");
  expect_error<InvalidArgument>([&] { read_allow_file(p); },
                                {p.string(), "line 3", "expected a public key (40 characters of the Z85 alphabet)",
                                 "got '" + a.substr(0, 39) + "' (39 characters)"});
  std::string bad = a;
  bad[0] = '~';
  write_text(p, a + "\n" + bad + "\n");
  expect_error<InvalidArgument>([&] { read_allow_file(p); }, {"line 2", "character '~' at position 1"});
  write_text(p, "# nobody\n\n");
  expect_error<InvalidArgument>([&] { read_allow_file(p); },
                                {p.string(), "expected at least one public key", "got none"});
  expect_error<InvalidArgument>([] { read_allow_file("/nonexistent-folder-fast/allow.txt"); },
                                {"allow file '/nonexistent-folder-fast/allow.txt': cannot open it"});
}

TEST(Keys, WriteAllowFileRejectsBadKeysNamesAndEmptyLists) {
  const fs::path p = dir("allow_write") / "allow.txt";
  expect_error<InvalidArgument>([&] { write_allow_file(p, {}); }, {"expected at least one public key to write"});
  expect_error<InvalidArgument>([&] { write_allow_file(p, {{"short", "x"}}); }, {"key 1", "got 5 characters"});
  expect_error<InvalidArgument>(
      [&] {
        write_allow_file(p, {{generate_key_pair().public_key, "a\nb"}});
      },
      {"key 1", "line break"});
}

}  // namespace
}  // namespace fast::runtime::zmq
