#pragma once
// CURVE key pairs and allow-lists of the zmq runtime (docs/launch.md, "Keys"). Keys are Z85 text
// (40 characters for 32 bytes), as ZeroMQ prints them.
//
// Key file (written by `fast keygen`, mode 0600):
//   # FAST CURVE key pair (fast keygen). Keep it secret.
//   public = "<40 characters>"
//   secret = "<40 characters>"
// Allow-list: one public key per line, optionally followed by whitespace and a name; a line whose
// first non-blank character is '#' is a comment ('#' is also a Z85 character); blank lines are ignored.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace fast::runtime::zmq {

struct KeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// 40 characters of the Z85 alphabet that decode to 32 bytes.
bool valid_z85_key(std::string_view key);
// A new key pair (zmq_curve_keypair); IoError if libzmq was built without CURVE.
KeyPair generate_key_pair();
// Writes the key file with mode 0600; InvalidArgument if it exists and !overwrite.
void write_key_file(const std::filesystem::path& path, const KeyPair& keys, bool overwrite = false);
// Reads and validates a key file: InvalidArgument naming the file, the line, expected versus got.
// Warns when the file is readable by group or others.
KeyPair read_key_file(const std::filesystem::path& path);

struct AllowedKey {
  std::string public_key;
  std::string name;  // free text after the key; may be empty
};

// Reads an allow-list: errors name file:line; an empty list is an error.
std::vector<AllowedKey> read_allow_file(const std::filesystem::path& path);
void write_allow_file(const std::filesystem::path& path, const std::vector<AllowedKey>& keys);

}  // namespace fast::runtime::zmq
